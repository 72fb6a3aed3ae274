#include <gtest/gtest.h>

#include "json_writer.h"

namespace kiln::tools {
namespace {

TEST(JsonQuote, EscapesWhatJsonRequires) {
  EXPECT_EQ(json_quote("plain"), "\"plain\"");
  EXPECT_EQ(json_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_quote("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(json_quote(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(json_quote(std::string("a\0b", 3)), "\"a\\u0000b\"");
  EXPECT_EQ(json_quote("/"), "\"/\"");
}

TEST(JsonQuote, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(json_quote("\xc3\xa9\xe2\x88\x88\xf0\x9f\x94\xa5"), "\"\xc3\xa9\xe2\x88\x88\xf0\x9f\x94\xa5\"");
  EXPECT_EQ(json_quote("\xff"), "\"\\ufffd\"");
  EXPECT_EQ(json_quote("a\xc3"), "\"a\\ufffd\"");             // truncated sequence
  EXPECT_EQ(json_quote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");     // overlong '/'
  EXPECT_EQ(json_quote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // UTF-16 surrogate
  EXPECT_EQ(json_quote("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // above U+10FFFF
}

TEST(JsonWriter, CompactDocument) {
  JsonWriter json(0);
  json.begin_object();
  json.key("a");
  json.number(int64_t{-3});
  json.key("b");
  json.begin_array();
  json.boolean(true);
  json.null();
  json.number(uint64_t{18446744073709551615u});
  json.number(0.5);
  json.number(1.0 / 0.0);
  json.string("x");
  json.end_array();
  json.key("empty");
  json.begin_object();
  json.end_object();
  json.key("none");
  json.begin_array();
  json.end_array();
  json.end_object();
  EXPECT_EQ(json.str(),
            "{\"a\":-3,\"b\":[true,null,18446744073709551615,0.5,null,\"x\"],\"empty\":{},\"none\":[]}");
}

TEST(JsonWriter, IndentedDocument) {
  JsonWriter json(2);
  json.begin_object();
  json.key("k");
  json.begin_array();
  json.number(int64_t{1});
  json.number(int64_t{2});
  json.end_array();
  json.end_object();
  EXPECT_EQ(json.str(), "{\n  \"k\": [\n    1,\n    2\n  ]\n}");
}

}  // namespace
}  // namespace kiln::tools
