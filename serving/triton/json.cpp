#include "json.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace kiln::triton {

Json Json::boolean(bool value) {
  Json j;
  j.kind_ = Kind::Bool;
  j.bool_ = value;
  return j;
}

Json Json::number(int64_t value) {
  Json j;
  j.kind_ = Kind::Number;
  j.text_ = std::to_string(value);
  return j;
}

Json Json::number_text(std::string text) {
  Json j;
  j.kind_ = Kind::Number;
  j.text_ = std::move(text);
  return j;
}

Json Json::string(std::string value) {
  Json j;
  j.kind_ = Kind::String;
  j.text_ = std::move(value);
  return j;
}

Json Json::array() {
  Json j;
  j.kind_ = Kind::Array;
  return j;
}

Json Json::object() {
  Json j;
  j.kind_ = Kind::Object;
  return j;
}

std::optional<int64_t> Json::as_int() const {
  if (kind_ != Kind::Number && kind_ != Kind::String) return std::nullopt;
  if (text_.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text_.c_str(), &end, 10);
  if (errno != 0 || end != text_.c_str() + text_.size()) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<std::string> Json::as_string() const {
  if (kind_ != Kind::String) return std::nullopt;
  return text_;
}

std::optional<bool> Json::as_bool() const {
  if (kind_ != Kind::Bool) return std::nullopt;
  return bool_;
}

void Json::push_back(Json value) { items_.emplace_back(std::string(), std::move(value)); }

const Json* Json::find(std::string_view key) const {
  if (kind_ != Kind::Object) return nullptr;
  for (const auto& [k, v] : items_)
    if (k == key) return &v;
  return nullptr;
}

Json* Json::find(std::string_view key) {
  return const_cast<Json*>(static_cast<const Json*>(this)->find(key));
}

Json& Json::set(std::string key, Json value) {
  if (Json* existing = find(key)) {
    *existing = std::move(value);
    return *existing;
  }
  items_.emplace_back(std::move(key), std::move(value));
  return items_.back().second;
}

namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  bool parse_value(Json* out, int depth) {
    // Model configurations nest a few levels; the limit only stops a hostile
    // document from exhausting the stack.
    if (depth > 64) return fail("nesting too deep");
    skip_space();
    if (pos_ >= s_.size()) return fail("unexpected end");
    char c = s_[pos_];
    if (c == '{') return parse_object(out, depth);
    if (c == '[') return parse_array(out, depth);
    if (c == '"') {
      std::string str;
      if (!parse_string(&str)) return false;
      *out = Json::string(std::move(str));
      return true;
    }
    if (s_.substr(pos_, 4) == "true") {
      pos_ += 4;
      *out = Json::boolean(true);
      return true;
    }
    if (s_.substr(pos_, 5) == "false") {
      pos_ += 5;
      *out = Json::boolean(false);
      return true;
    }
    if (s_.substr(pos_, 4) == "null") {
      pos_ += 4;
      *out = Json();
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(out);
    return fail("unexpected character");
  }

  bool at_end() {
    skip_space();
    return pos_ == s_.size();
  }

  std::string error() const { return error_ + " at offset " + std::to_string(pos_); }

 private:
  bool fail(const char* what) {
    if (error_.empty()) error_ = what;
    return false;
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }

  bool parse_number(Json* out) {
    size_t start = pos_;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
        ++pos_;
      } else {
        break;
      }
    }
    // Kept as text: a number is only ever read back as an integer or copied.
    *out = Json::number_text(std::string(s_.substr(start, pos_ - start)));
    return true;
  }

  bool parse_string(std::string* out) {
    ++pos_;  // opening quote
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          if (pos_ + 4 > s_.size()) return fail("short \\u escape");
          unsigned code = static_cast<unsigned>(std::strtoul(std::string(s_.substr(pos_, 4)).c_str(), nullptr, 16));
          pos_ += 4;
          // UTF-8 of a code point of the Basic Multilingual Plane; surrogate
          // pairs do not occur in model configurations.
          if (code < 0x80) {
            out->push_back(static_cast<char>(code));
          } else if (code < 0x800) {
            out->push_back(static_cast<char>(0xC0 | (code >> 6)));
            out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
          } else {
            out->push_back(static_cast<char>(0xE0 | (code >> 12)));
            out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
            out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
          }
          break;
        }
        default: return fail("bad escape");
      }
    }
    return fail("unterminated string");
  }

  bool parse_array(Json* out, int depth) {
    ++pos_;
    *out = Json::array();
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      Json item;
      if (!parse_value(&item, depth + 1)) return false;
      out->push_back(std::move(item));
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail("expected , or ]");
    }
  }

  bool parse_object(Json* out, int depth) {
    ++pos_;
    *out = Json::object();
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("expected a key");
      std::string key;
      if (!parse_string(&key)) return false;
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ':') return fail("expected :");
      ++pos_;
      Json value;
      if (!parse_value(&value, depth + 1)) return false;
      out->set(std::move(key), std::move(value));
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail("expected , or }");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

void dump_string(const std::string& s, std::string* out) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

}  // namespace

std::optional<Json> Json::parse(std::string_view text, std::string* error) {
  Parser parser(text);
  Json out;
  if (!parser.parse_value(&out, 0) || !parser.at_end()) {
    *error = parser.error();
    return std::nullopt;
  }
  return out;
}

std::string Json::dump() const {
  std::string out;
  switch (kind_) {
    case Kind::Null: out = "null"; break;
    case Kind::Bool: out = bool_ ? "true" : "false"; break;
    case Kind::Number: out = text_; break;
    case Kind::String: dump_string(text_, &out); break;
    case Kind::Array:
      out.push_back('[');
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out.push_back(',');
        out += items_[i].second.dump();
      }
      out.push_back(']');
      break;
    case Kind::Object:
      out.push_back('{');
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out.push_back(',');
        dump_string(items_[i].first, &out);
        out.push_back(':');
        out += items_[i].second.dump();
      }
      out.push_back('}');
      break;
  }
  return out;
}

}  // namespace kiln::triton
