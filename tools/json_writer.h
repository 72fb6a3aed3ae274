// A minimal streaming JSON writer for the CLI's machine-readable output.
//
// Callers emit structure in order (begin_object, key, value..., end_object);
// the writer inserts commas, indentation and escaping. It does not check that
// the calls make a well-formed document beyond what it needs for commas; the
// CLI's own tests parse its output with a real JSON parser.
//
// Strings are written as valid UTF-8 JSON: quotes, backslashes and control
// characters are escaped, and bytes that are not valid UTF-8 (names read from
// a file may hold anything) are replaced by U+FFFD. Not thread-safe; one
// writer per document.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::tools {

/// `text` as a quoted JSON string literal.
std::string json_quote(std::string_view text);

class JsonWriter {
 public:
  /// `indent` spaces per level; 0 writes everything on one line.
  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  /// Names the next value inside an object.
  void key(std::string_view name);

  void string(std::string_view value);
  void number(int64_t value);
  void number(uint64_t value);
  /// Non-finite values have no JSON form and are written as null.
  void number(double value);
  void boolean(bool value);
  void null();

  /// The document so far.
  const std::string& str() const noexcept { return out_; }

 private:
  void before_value();
  void newline();

  struct Level {
    bool is_object;
    bool empty;
  };
  int indent_;
  std::string out_;
  std::vector<Level> stack_;
  bool after_key_ = false;
};

}  // namespace kiln::tools
