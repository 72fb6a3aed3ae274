// kiln::Runtime: what a runtime of this build holds (the aoti backend, the CPU
// device, the .pt2 importer), its settings by scope, and that a runtime's
// settings reach only its own modules.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "core/settings.h"
#include "kiln/log.h"
#include "kiln/runtime.h"
#include "runtime/runtime_state.h"

namespace kiln {
namespace {

TEST(Runtime, HoldsTheBuiltinBackendDevicesAndImporters) {
  auto runtime = Runtime::create();
  ASSERT_TRUE(runtime.ok()) << last_error_message();
  Runtime::State& state = (*runtime)->state();
  Backend* aoti = state.find_backend("aoti");
  ASSERT_NE(aoti, nullptr);
  EXPECT_EQ(state.find_backend("nope"), nullptr);
  EXPECT_EQ(state.backend_names(), "aoti");
  auto cpu = state.device(DeviceType::CPU);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ((*cpu)->type(), DeviceType::CPU);
  BackendOptions unknown;
  unknown.set("turbo", true);
  EXPECT_EQ(aoti->validate_options(unknown), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("unknown option 'aoti.turbo'"), std::string::npos);
  BackendOptions out_of_range;
  out_of_range.set("num_models", 0);
  EXPECT_EQ(aoti->validate_options(out_of_range), Error::InvalidArgument);
  EXPECT_EQ(Runtime::default_runtime(), Runtime::default_runtime());
}

TEST(Runtime, UnknownOrMistypedSettingsAreRefusedByName) {
  EXPECT_EQ(Runtime::create({{"turbo", true}}).error(), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("unknown setting 'turbo'"), std::string::npos) << last_error_message();
  EXPECT_EQ(Runtime::create({{"require_signature", int64_t{1}}}).error(), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("require_signature"), std::string::npos) << last_error_message();
  auto runtime = Runtime::create();
  ASSERT_TRUE(runtime.ok());
  EXPECT_EQ((*runtime)->get("turbo").error(), Error::NotFound);
}

TEST(Runtime, RuntimeSettingsBelongToOneRuntime) {
  auto strict = Runtime::create({{"require_signature", true}, {"trusted_keys", std::string("/keys/a.pub")}});
  auto lax = Runtime::create();
  ASSERT_TRUE(strict.ok() && lax.ok()) << last_error_message();
  EXPECT_EQ(std::get<bool>(*(*strict)->get("require_signature")), true);
  EXPECT_EQ(std::get<std::string>(*(*strict)->get("trusted_keys")), "/keys/a.pub");
  EXPECT_EQ(std::get<bool>(*(*lax)->get("require_signature")), false);
  EXPECT_EQ(std::get<bool>(*Runtime::default_runtime()->get("require_signature")), false);
}

TEST(Runtime, ProcessSettingsAreTheProcesss) {
  auto a = Runtime::create();
  auto b = Runtime::create();
  ASSERT_TRUE(a.ok() && b.ok());
  const LogLevel before = log_level();
  ASSERT_EQ((*a)->set("log_level", std::string("error")), Error::Ok) << last_error_message();
  EXPECT_EQ(log_level(), LogLevel::Error);
  EXPECT_EQ(std::get<std::string>(*(*b)->get("log_level")), "error");
  set_log_level(before);
  EXPECT_EQ(log_level(), before);
}

TEST(Runtime, DisableCudaKeepsItsModulesOffCuda) {
  auto runtime = Runtime::create({{"disable_cuda", true}});
  ASSERT_TRUE(runtime.ok());
  EXPECT_EQ((*runtime)->state().device(DeviceType::CUDA).error(), Error::NotSupported);
  EXPECT_NE(last_error_message().find("disable_cuda"), std::string::npos) << last_error_message();
  EXPECT_TRUE((*runtime)->state().device(DeviceType::CPU).ok());
}

TEST(Runtime, AnEnvironmentItCannotReadStopsCreationAndLoads) {
  (void)process_settings();  // the process read its environment at start, before the variable below
  ::setenv("KILN_DISABLE_CUDA", "sometimes", 1);
  auto refused = Runtime::create();
  const std::string message = last_error_message();
  ::unsetenv("KILN_DISABLE_CUDA");
  EXPECT_EQ(refused.error(), Error::InvalidArgument);
  EXPECT_NE(message.find("KILN_DISABLE_CUDA='sometimes'"), std::string::npos) << message;
  EXPECT_TRUE(Runtime::create().ok()) << last_error_message();
}

}  // namespace
}  // namespace kiln
