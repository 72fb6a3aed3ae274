#include "json_writer.h"

#include <cmath>
#include <cstdio>

namespace kiln::tools {
namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 if invalid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length;
  uint32_t code;
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    code = lead & 0x1fu;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    code = lead & 0x0fu;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    code = lead & 0x07u;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0u) != 0x80u) return 0;
    code = (code << 6) | (byte(i + k) & 0x3fu);
  }
  if ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000) || code > 0x10ffff ||
      (code >= 0xd800 && code <= 0xdfff))
    return 0;
  return length;
}

}  // namespace

std::string json_quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\b': out += "\\b"; ++i; continue;
      case '\f': out += "\\f"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      default: break;
    }
    if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
      ++i;
      continue;
    }
    const size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  out.push_back('"');
  return out;
}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_.push_back('\n');
  out_.append(stack_.size() * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) return;
  if (!stack_.back().empty) out_.push_back(',');
  stack_.back().empty = false;
  newline();
}

void JsonWriter::begin_object() {
  before_value();
  out_.push_back('{');
  stack_.push_back({true, true});
}

void JsonWriter::end_object() {
  const bool empty = stack_.empty() || stack_.back().empty;
  if (!stack_.empty()) stack_.pop_back();
  if (!empty) newline();
  out_.push_back('}');
}

void JsonWriter::begin_array() {
  before_value();
  out_.push_back('[');
  stack_.push_back({false, true});
}

void JsonWriter::end_array() {
  const bool empty = stack_.empty() || stack_.back().empty;
  if (!stack_.empty()) stack_.pop_back();
  if (!empty) newline();
  out_.push_back(']');
}

void JsonWriter::key(std::string_view name) {
  before_value();
  out_ += json_quote(name);
  out_ += indent_ > 0 ? ": " : ":";
  after_key_ = true;
}

void JsonWriter::string(std::string_view value) {
  before_value();
  out_ += json_quote(value);
}

void JsonWriter::number(int64_t value) {
  before_value();
  out_ += std::to_string(value);
}

void JsonWriter::number(uint64_t value) {
  before_value();
  out_ += std::to_string(value);
}

void JsonWriter::number(double value) {
  before_value();
  if (!std::isfinite(value)) {
    out_ += "null";
    return;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  out_ += buffer;
}

void JsonWriter::boolean(bool value) {
  before_value();
  out_ += value ? "true" : "false";
}

void JsonWriter::null() {
  before_value();
  out_ += "null";
}

}  // namespace kiln::tools
