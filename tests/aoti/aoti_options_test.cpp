// Validation of the aoti backend's options: every known key with its type
// and range or choices, and unknown keys refused by name.
#include <gtest/gtest.h>

#include "aoti/aoti_backend.h"

namespace kiln::aoti {
namespace {

Error validate(const BackendOptions& options) { return AotiBackend::instance().validate_options(options); }

TEST(AotiOptions, AcceptsEveryKnownOption) {
  BackendOptions o;
  o.set("device_index", 1);
  o.set("num_models", 4);
  o.set("stream", "shared");
  o.set("keep_outputs_on_device", true);
  EXPECT_EQ(validate(o), Error::Ok) << last_error_message();
  for (const char* policy : {"per_method", "shared", "caller"}) {
    BackendOptions s;
    s.set("stream", policy);
    EXPECT_EQ(validate(s), Error::Ok) << policy << ": " << last_error_message();
  }
  EXPECT_EQ(validate(BackendOptions{}), Error::Ok);
}

TEST(AotiOptions, RefusesUnknownKeysListingTheKnownOnes) {
  BackendOptions o;
  o.set("streams", "shared");
  EXPECT_EQ(validate(o), Error::InvalidArgument);
  const std::string message = last_error_message();
  EXPECT_NE(message.find("unknown option 'aoti.streams'"), std::string::npos) << message;
  for (const char* known : {"device_index", "num_models", "stream", "keep_outputs_on_device"})
    EXPECT_NE(message.find(known), std::string::npos) << known << " missing from: " << message;
}

TEST(AotiOptions, RefusesWrongTypes) {
  struct Case {
    const char* key;
    OptionValue value;
    const char* expected;
  };
  const Case cases[] = {
      {"device_index", std::string("0"), "must be an integer"},
      {"num_models", true, "must be an integer"},
      {"stream", int64_t{1}, "must be a string"},
      {"keep_outputs_on_device", int64_t{1}, "must be a boolean"},
      {"keep_outputs_on_device", std::string("true"), "must be a boolean"},
  };
  for (const Case& c : cases) {
    BackendOptions o;
    std::visit([&](const auto& v) { o.set(c.key, v); }, c.value);
    EXPECT_EQ(validate(o), Error::InvalidArgument) << c.key;
    EXPECT_NE(last_error_message().find(std::string("'aoti.") + c.key + "' " + c.expected), std::string::npos)
        << last_error_message();
  }
}

TEST(AotiOptions, RefusesStreamPoliciesOutsideTheChoices) {
  BackendOptions o;
  o.set("stream", "per-method");
  EXPECT_EQ(validate(o), Error::InvalidArgument);
  const std::string message = last_error_message();
  EXPECT_NE(message.find("\"per-method\" is not one of \"per_method\", \"shared\", \"caller\""), std::string::npos)
      << message;
}

TEST(AotiOptions, RefusesIntegersOutOfRange) {
  BackendOptions o;
  o.set("num_models", 0);
  EXPECT_EQ(validate(o), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("'aoti.num_models' = 0 is outside [1, 256]"), std::string::npos)
      << last_error_message();
  BackendOptions d;
  d.set("device_index", -1);
  EXPECT_EQ(validate(d), Error::InvalidArgument);
}

TEST(AotiOptions, NumThreadsIsAPositiveInteger) {
  for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{4096}}) {
    BackendOptions o;
    o.set("num_threads", n);
    EXPECT_EQ(validate(o), Error::Ok) << n << ": " << last_error_message();
  }
  BackendOptions zero;
  zero.set("num_threads", int64_t{0});
  EXPECT_EQ(validate(zero), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("'aoti.num_threads' = 0 is outside [1, 4096]"), std::string::npos)
      << last_error_message();
  BackendOptions text;
  text.set("num_threads", std::string("4"));
  EXPECT_EQ(validate(text), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("'aoti.num_threads' must be an integer"), std::string::npos)
      << last_error_message();
}

}  // namespace
}  // namespace kiln::aoti
