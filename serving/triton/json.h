// A small JSON value, parser and writer for Triton's model configuration.
//
// Triton hands a backend its model configuration as JSON text and takes the
// auto-completed configuration back as JSON text; nothing else here needs JSON,
// so a few hundred lines replace a dependency. Numbers keep their source text,
// since Triton writes 64-bit integers (dims, max_batch_size) that a double would
// round.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::triton {

class Json {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Json() = default;
  static Json boolean(bool value);
  static Json number(int64_t value);
  static Json number_text(std::string text);  // a number as written in JSON
  static Json string(std::string value);
  static Json array();
  static Json object();

  // Parses `text`; on failure returns nullopt and sets `*error`.
  static std::optional<Json> parse(std::string_view text, std::string* error);
  std::string dump() const;

  Kind kind() const { return kind_; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_array() const { return kind_ == Kind::Array; }

  // Scalars. as_int parses a number's text (or a string holding an integer,
  // which is how Triton writes 64-bit fields); nullopt if it is not one.
  std::optional<int64_t> as_int() const;
  std::optional<std::string> as_string() const;
  std::optional<bool> as_bool() const;

  // Arrays.
  size_t size() const { return items_.size(); }
  const Json& at(size_t i) const { return items_[i].second; }
  Json& at(size_t i) { return items_[i].second; }
  void push_back(Json value);

  // Objects: member lookup (nullptr when absent) and insertion or replacement.
  const Json* find(std::string_view key) const;
  Json* find(std::string_view key);
  const std::vector<std::pair<std::string, Json>>& members() const { return items_; }
  Json& set(std::string key, Json value);

 private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  std::string text_;  // a string's value or a number's source text
  std::vector<std::pair<std::string, Json>> items_;  // array items (empty keys) or object members
};

}  // namespace kiln::triton
