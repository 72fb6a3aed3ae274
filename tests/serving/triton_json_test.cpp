// The Triton backend's JSON reader and writer (serving/triton/json.h), which
// reads the model configuration Triton sends and writes the completed one back.
#include "json.h"

#include <gtest/gtest.h>

namespace kiln::triton {
namespace {

TEST(TritonJson, ReadsAModelConfiguration) {
  // How Triton writes a configuration: 64-bit integers as strings.
  const char* text = R"({"name":"mlp","max_batch_size":"64","input":[{"name":"x","data_type":"TYPE_FP32",
    "dims":["-1","16"]}],"parameters":{"num_threads":{"string_value":"2"}},"dynamic_batching":{},
    "optional":false,"note":"tab\tand \"quote\" \u00e9"})";
  std::string error;
  std::optional<Json> config = Json::parse(text, &error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->find("name")->as_string(), "mlp");
  EXPECT_EQ(config->find("max_batch_size")->as_int(), 64);
  const Json& dims = *config->find("input")->at(0).find("dims");
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_EQ(dims.at(0).as_int(), -1);
  EXPECT_EQ(dims.at(1).as_int(), 16);
  EXPECT_EQ(config->find("parameters")->find("num_threads")->find("string_value")->as_string(), "2");
  EXPECT_TRUE(config->find("dynamic_batching")->is_object());
  EXPECT_EQ(config->find("optional")->as_bool(), false);
  EXPECT_EQ(config->find("note")->as_string(), "tab\tand \"quote\" \xc3\xa9");
  EXPECT_EQ(config->find("absent"), nullptr);
}

TEST(TritonJson, WritesWhatItReads) {
  Json config = Json::object();
  config.set("max_batch_size", Json::number(9007199254740993));  // above 2^53: kept exact
  Json dims = Json::array();
  dims.push_back(Json::number(-1));
  config.set("dims", std::move(dims));
  config.set("name", Json::string("a\"b\n"));
  config.set("name", Json::string("replaced"));  // set replaces, keeping one member
  EXPECT_EQ(config.dump(), R"({"max_batch_size":9007199254740993,"dims":[-1],"name":"replaced"})");
  std::string error;
  std::optional<Json> again = Json::parse(config.dump(), &error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(again->dump(), config.dump());
  EXPECT_EQ(again->find("max_batch_size")->as_int(), 9007199254740993);
}

TEST(TritonJson, RefusesMalformedText) {
  for (const char* bad : {"", "{", R"({"a":})", R"({"a" 1})", "[1,]", R"("open)", "{} extra", "nul"}) {
    std::string error;
    EXPECT_FALSE(Json::parse(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  // Deep nesting is refused rather than recursing without bound.
  std::string deep(1000, '[');
  std::string error;
  EXPECT_FALSE(Json::parse(deep, &error));
}

TEST(TritonJson, IntegersOnlyWhereTheTextIsOne) {
  std::string error;
  std::optional<Json> v = Json::parse(R"([1.5, "12x", "7", true])", &error);
  ASSERT_TRUE(v) << error;
  EXPECT_FALSE(v->at(0).as_int());
  EXPECT_FALSE(v->at(1).as_int());
  EXPECT_EQ(v->at(2).as_int(), 7);
  EXPECT_FALSE(v->at(3).as_int());
}

}  // namespace
}  // namespace kiln::triton
