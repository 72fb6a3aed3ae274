// The settings table and its one parser: every setting parses its default,
// the environment's text means what it says in every setting (KILN_DISABLE_CUDA=false
// used to disable CUDA), and a value the environment gave cannot be changed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <set>
#include <string>

#include "core/settings.h"

namespace kiln {
namespace {

// Sets environment variables for its lifetime.
class ScopedEnvironment {
 public:
  ScopedEnvironment& set(const char* name, const char* value) {
    ::setenv(name, value, 1);
    names_.push_back(name);
    return *this;
  }
  ~ScopedEnvironment() {
    for (const char* name : names_) ::unsetenv(name);
  }

 private:
  std::vector<const char*> names_;
};

TEST(SettingTable, EveryEntryIsNamedOnceDocumentedAndParsesItsDefault) {
  std::set<std::string_view> names;
  for (const SettingInfo& info : setting_table()) {
    EXPECT_TRUE(names.insert(info.name).second) << "two settings called " << info.name;
    EXPECT_FALSE(info.doc.empty()) << info.name;
    auto parsed = parse_setting(info, info.fallback);
    EXPECT_TRUE(parsed.ok()) << info.name << ": " << last_error_message();
    EXPECT_EQ(&setting_info(info.id), &info);
    EXPECT_EQ(find_setting(info.name), &info);
  }
  EXPECT_EQ(names.size(), kSettingCount);
  EXPECT_EQ(find_setting("no_such_setting"), nullptr);
  EXPECT_EQ(setting_environment_variable(setting_info(SettingId::CudaAllowTf32)), "KILN_CUDA_ALLOW_TF32");
}

TEST(SettingParser, BoolsIntsAndChoicesMeanWhatTheySay) {
  const SettingInfo& flag = setting_info(SettingId::DisableCuda);
  for (const char* yes : {"1", "true", "TRUE", "on", "Yes"}) EXPECT_EQ(std::get<bool>(*parse_setting(flag, yes)), true);
  for (const char* no : {"0", "false", "False", "off", "no"}) EXPECT_EQ(std::get<bool>(*parse_setting(flag, no)), false);
  for (const char* bad : {"", "2", "maybe", "truee"}) {
    EXPECT_EQ(parse_setting(flag, bad).error(), Error::InvalidArgument) << bad;
    EXPECT_NE(last_error_message().find("disable_cuda"), std::string::npos) << last_error_message();
  }
  const SettingInfo& count = setting_info(SettingId::CudaUploadWorkers);
  EXPECT_EQ(std::get<int64_t>(*parse_setting(count, "12")), 12);
  for (const char* bad : {"", "-1", "1.5", "12x", "99999999999999999999"})
    EXPECT_EQ(parse_setting(count, bad).error(), Error::InvalidArgument) << bad;
  const SettingInfo& level = setting_info(SettingId::LogLevel);
  EXPECT_EQ(std::get<std::string>(*parse_setting(level, "debug")), "debug");
  EXPECT_EQ(parse_setting(level, "verbose").error(), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("debug|info|warning|error|off"), std::string::npos) << last_error_message();
}

TEST(Settings, TheEnvironmentsFalseIsFalseInEverySetting) {
  ScopedEnvironment env;
  env.set("KILN_DISABLE_CUDA", "false").set("KILN_CUDA_ALLOW_TF32", "false").set("KILN_POISON_ALLOCATIONS", "no");
  const Settings settings;
  EXPECT_FALSE(settings.get_bool(SettingId::DisableCuda));
  EXPECT_FALSE(settings.get_bool(SettingId::CudaAllowTf32));
  EXPECT_FALSE(settings.get_bool(SettingId::PoisonAllocations));
  EXPECT_TRUE(settings.from_environment(SettingId::DisableCuda));
  EXPECT_TRUE(settings.environment_errors().empty());
}

TEST(Settings, TheEnvironmentFixesAValueAndReportsWhatItCannotRead) {
  ScopedEnvironment env;
  env.set("KILN_REQUIRE_SIGNATURE", "1").set("KILN_CUDA_UPLOAD_WORKERS", "lots").set("KILN_LOG_LEVEL", "");
  Settings settings;
  EXPECT_TRUE(settings.get_bool(SettingId::RequireSignature));
  EXPECT_EQ(settings.set(SettingId::RequireSignature, false), Error::InvalidState);
  EXPECT_NE(last_error_message().find("KILN_REQUIRE_SIGNATURE=1"), std::string::npos) << last_error_message();
  EXPECT_TRUE(settings.get_bool(SettingId::RequireSignature));
  // A value that does not parse keeps the default and is reported.
  EXPECT_EQ(settings.get_int(SettingId::CudaUploadWorkers), 0);
  ASSERT_EQ(settings.environment_errors().size(), 1u);
  EXPECT_NE(settings.environment_errors()[0].find("KILN_CUDA_UPLOAD_WORKERS='lots'"), std::string::npos);
  // An empty variable is as good as unset.
  EXPECT_FALSE(settings.from_environment(SettingId::LogLevel));
}

TEST(Settings, SetChecksTheTypeAndParsesText) {
  ScopedEnvironment env;  // none of these set
  Settings settings;
  EXPECT_EQ(settings.set(SettingId::CudaUploadWorkers, int64_t{4}), Error::Ok);
  EXPECT_EQ(settings.get_int(SettingId::CudaUploadWorkers), 4);
  EXPECT_EQ(settings.set(SettingId::CudaUploadWorkers, std::string("6")), Error::Ok);
  EXPECT_EQ(settings.get_int(SettingId::CudaUploadWorkers), 6);
  EXPECT_EQ(settings.set(SettingId::CudaUploadWorkers, true), Error::InvalidArgument);
  EXPECT_EQ(settings.set(SettingId::CudaUploadWorkers, int64_t{-3}), Error::InvalidArgument);
  EXPECT_EQ(settings.get_int(SettingId::CudaUploadWorkers), 6);
  EXPECT_EQ(settings.set(SettingId::LogLevel, std::string("error")), Error::Ok);
  EXPECT_EQ(std::get<std::string>(settings.get(SettingId::LogLevel)), "error");
  EXPECT_EQ(settings.get_int(SettingId::LogLevel), 3);
  EXPECT_EQ(settings.set(SettingId::LogLevel, true), Error::InvalidArgument);
  EXPECT_EQ(settings.set(SettingId::BlasLibrary, std::string("/opt/blas.so")), Error::Ok);
  EXPECT_EQ(settings.get_string(SettingId::BlasLibrary), "/opt/blas.so");
  EXPECT_EQ(settings.set(SettingId::BlasLibrary, int64_t{1}), Error::InvalidArgument);
}

}  // namespace
}  // namespace kiln
