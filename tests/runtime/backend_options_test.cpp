#include <gtest/gtest.h>

#include <memory>

#include "kiln/backend_options.h"

namespace kiln {
namespace {

TEST(BackendOptions, TypedGettersOnlyMatchTheirType) {
  BackendOptions o;
  o.set("num_models", 4);
  o.set("name", "fast");
  o.set("flag", true);
  EXPECT_EQ(o.get_int("num_models"), 4);
  EXPECT_FALSE(o.get_bool("num_models").has_value());
  EXPECT_EQ(o.get_string("name"), "fast");
  EXPECT_EQ(o.get_bool("flag"), true);
  EXPECT_EQ(o.find("missing"), nullptr);
}

TEST(BackendOptions, MapIsADeepCopy) {
  LoadBackendOptionsMap copy;
  {
    auto map = std::make_unique<LoadBackendOptionsMap>();
    BackendOptions o;
    std::string value = "temporary";
    o.set("key", value);
    map->set_options("aoti", o);
    copy = *map;
  }  // the original map and strings are gone
  ASSERT_NE(copy.options_for("aoti"), nullptr);
  EXPECT_EQ(copy.options_for("aoti")->get_string("key"), "temporary");
  EXPECT_EQ(copy.options_for("other"), nullptr);
}

}  // namespace
}  // namespace kiln
