// Faults that must fail one call cleanly and break nothing else: a memory
// limit (aoti.max_memory_bytes) too small for the weights or for a run, a
// missing external data file, and a library that cannot be dlopen'ed; plus
// where the loader puts the model's code (a memfd, or a private temporary
// file that is gone when load returns, whatever the outcome).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "aoti/aoti_backend.h"
#include "shims/common/memory_budget.h"
#include "core/cpu_device.h"
#include "core/settings.h"
#include "fake_program.h"
#include "kiln/module.h"

namespace kiln {
namespace {

LoadBackendOptionsMap memory_limit(int64_t bytes) {
  BackendOptions aoti;
  aoti.set("max_memory_bytes", bytes);
  LoadBackendOptionsMap options;
  options.set_options("aoti", aoti);
  return options;
}

// y = scale * x for the plain fake model loaded once per process.
void expect_scaled(Module& module, float scale, size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) - 2.5f;
  auto out = module.forward({vector_tensor(x)});
  ASSERT_TRUE(out.ok()) << last_error_message();
  ASSERT_EQ((*out)[0].numel(), static_cast<int64_t>(n));
  for (size_t i = 0; i < n; ++i) EXPECT_EQ((*out)[0].data<float>()[i], scale * x[i]) << i;
}

TEST(MemoryLimit, OptionIsAPositiveByteCount) {
  BackendOptions ok;
  ok.set("max_memory_bytes", int64_t{1} << 40);
  EXPECT_EQ(aoti::AotiBackend::instance().validate_options(ok), Error::Ok) << last_error_message();
  BackendOptions zero;
  zero.set("max_memory_bytes", 0);
  EXPECT_EQ(aoti::AotiBackend::instance().validate_options(zero), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("'aoti.max_memory_bytes' = 0 is outside"), std::string::npos)
      << last_error_message();
}

TEST(MemoryLimit, WeightsOverTheLimitFailLoadWithOutOfMemory) {
  const testing_util::TempDir dir;
  auto other_path = write_program(dir, KILN_FAKE_MODEL_PATH, 7.0f, "oom-other");
  auto path = write_program(dir, KILN_FAKE_MODEL_PATH, 3.0f, "oom-load");
  Module other(other_path);  // an unrelated model, loaded first, without a limit
  ASSERT_EQ(other.load_method("forward"), Error::Ok) << last_error_message();

  Module module(path);
  const auto tiny = memory_limit(3);  // the weights are 4 bytes
  EXPECT_EQ(module.load_method("forward", &tiny), Error::OutOfMemory);
  const std::string message = last_error_message();
  EXPECT_NE(message.find("method 'forward'"), std::string::npos) << message;
  EXPECT_NE(message.find("weights needs 4 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("aoti.max_memory_bytes) is 3 bytes"), std::string::npos) << message;
  EXPECT_FALSE(module.is_method_loaded("forward"));

  // The same Module loads with a limit that fits, and runs correctly.
  const auto enough = memory_limit(1024);
  ASSERT_EQ(module.load_method("forward", &enough), Error::Ok) << last_error_message();
  expect_scaled(module, 3.0f, 16);
  expect_scaled(other, 7.0f, 16);  // the other model never noticed
}

TEST(MemoryLimit, RunsOverTheLimitFailWithOutOfMemoryAndLeakNothing) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_PATH, 2.0f, "oom-run");
  Module module(path);
  // 4 bytes of weights + one output of 8 floats (32 bytes) fit; 16 floats do not.
  const auto limit = memory_limit(4 + 32);
  ASSERT_EQ(module.load_method("forward", &limit), Error::Ok) << last_error_message();

  const size_t host_before = CpuDevice::instance().bytes_in_use();
  std::vector<float> big(16, 1.0f);
  auto out = module.forward({vector_tensor(big)});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error(), Error::OutOfMemory);
  const std::string message = last_error_message();
  EXPECT_NE(message.find("running the model failed"), std::string::npos) << message;
  EXPECT_NE(message.find("needs 64 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("with 4 in use"), std::string::npos) << message;
  // The failed run freed what it had (the stolen input handle included).
  EXPECT_EQ(CpuDevice::instance().bytes_in_use(), host_before);

  // The same method keeps working for inputs that fit.
  expect_scaled(module, 2.0f, 8);
  // Outputs stay charged while the caller holds them: a second output of the
  // same size does not fit until the first is freed.
  std::vector<float> x(8, 1.5f);
  {
    auto held = module.forward({vector_tensor(x)});
    ASSERT_TRUE(held.ok()) << last_error_message();
    EXPECT_EQ(module.forward({vector_tensor(x)}).error(), Error::OutOfMemory);
  }
  expect_scaled(module, 2.0f, 8);
}

// A real allocation failure (no limit set; 2^46 floats, 256 TiB, is more than
// x86-64 user address space, whatever the overcommit policy) is an
// OutOfMemory naming the size, flagged for the
// delegate so a model run that hits it reports OutOfMemory too.
TEST(MemoryLimit, GenuineHostAllocationFailureIsOutOfMemory) {
  (void)aoti::take_out_of_memory();
  const std::vector<int64_t> sizes{int64_t{1} << 46};
  const std::vector<int64_t> strides{1};
  auto t = aoti::empty_strided_in_budget(sizes, strides, DType::Float32, Device{});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error(), Error::OutOfMemory);
  EXPECT_NE(last_error_message().find(std::to_string(int64_t{4} << 46) + " bytes failed"), std::string::npos)
      << last_error_message();
  EXPECT_TRUE(aoti::take_out_of_memory());
  EXPECT_FALSE(aoti::take_out_of_memory());  // taking it clears it
}

TEST(ExternalData, MissingFileFailsModuleLoadWithNotFoundNamingIt) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_PATH, 4.0f, "external", /*external_weights=*/true);
  const std::string data = path + ".data";
  {
    Module module(path);  // with its data file: loads and runs
    ASSERT_EQ(module.load_method("forward"), Error::Ok) << last_error_message();
    expect_scaled(module, 4.0f, 4);
  }
  ASSERT_TRUE(std::filesystem::remove(data));
  Module module(path);
  EXPECT_EQ(module.load(), Error::NotFound);
  EXPECT_NE(last_error_message().find(std::filesystem::path(data).filename().string()), std::string::npos)
      << last_error_message();
  EXPECT_FALSE(module.is_loaded());
  // Running loads first, and fails the same way instead of crashing.
  std::vector<float> x(4, 1.0f);
  EXPECT_EQ(module.forward({vector_tensor(x)}).error(), Error::NotFound);
  // An explicit data file path that does not exist: NotFound naming it.
  Module explicit_path(path, {data + ".elsewhere"});
  EXPECT_EQ(explicit_path.load(), Error::NotFound);
  EXPECT_NE(last_error_message().find(".elsewhere"), std::string::npos) << last_error_message();
}

// Points TMPDIR at a fresh empty directory and optionally disables memfd
// (setting disable_memfd) for the scope; restores both (the directory goes
// with the object).
class ScratchEnvironment {
 public:
  explicit ScratchEnvironment(bool disable_memfd) : dir_(dir_holder_.path()) {
    if (const char* old = std::getenv("TMPDIR")) old_tmpdir_ = old, had_tmpdir_ = true;
    ::setenv("TMPDIR", dir_.c_str(), 1);
    if (disable_memfd) {
      EXPECT_EQ(process_settings().set(SettingId::DisableMemfd, true), Error::Ok);
    }
    ::unsetenv("KILN_FAKE_MODEL_ORIGIN");
  }
  ~ScratchEnvironment() {
    if (had_tmpdir_) ::setenv("TMPDIR", old_tmpdir_.c_str(), 1);
    else ::unsetenv("TMPDIR");
    EXPECT_EQ(process_settings().set(SettingId::DisableMemfd, false), Error::Ok);
  }
  const std::filesystem::path& dir() const { return dir_; }
  bool dir_is_empty() const { return std::filesystem::is_empty(dir_); }

 private:
  testing_util::TempDir dir_holder_{"kiln-tmpdir"};
  std::filesystem::path dir_;
  std::string old_tmpdir_;
  bool had_tmpdir_ = false;
};

// "<path> <file mode> <dir mode>" as the REPORTS_ORIGIN fixture recorded it.
struct Origin {
  std::string path;
  std::string file_mode;
  std::string dir_mode;
};

Origin reported_origin() {
  const char* value = std::getenv("KILN_FAKE_MODEL_ORIGIN");
  EXPECT_NE(value, nullptr) << "the fixture's constructor did not run";
  Origin origin;
  if (!value) return origin;
  std::istringstream in(value);
  in >> origin.path >> origin.file_mode >> origin.dir_mode;
  return origin;
}

TEST(LibraryPlacement, WithMemfdNothingIsWrittenToDisk) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_REPORTS_ORIGIN_PATH, 2.0f, "memfd");
  ScratchEnvironment env(/*disable_memfd=*/false);
  Module module(path);
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << last_error_message();
  const Origin origin = reported_origin();
  EXPECT_EQ(origin.path.rfind("/proc/self/fd/", 0), 0u) << origin.path;
  EXPECT_TRUE(env.dir_is_empty());
  expect_scaled(module, 2.0f, 4);
}

TEST(LibraryPlacement, FallbackTemporaryFileIsPrivateAndGoneAfterLoad) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_REPORTS_ORIGIN_PATH, 2.0f, "tmpfile");
  ScratchEnvironment env(/*disable_memfd=*/true);
  Module module(path);
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << last_error_message();
  // While dlopen ran, the library was <TMPDIR>/kiln-XXXXXX/model.so, owner-only.
  const Origin origin = reported_origin();
  EXPECT_EQ(origin.path.rfind((env.dir() / "kiln-").string(), 0), 0u) << origin.path;
  EXPECT_EQ(origin.file_mode, "700");
  EXPECT_EQ(origin.dir_mode, "700");
  // Both are removed as soon as the library is loaded; it keeps working.
  EXPECT_TRUE(env.dir_is_empty());
  expect_scaled(module, 2.0f, 4);
}

TEST(LibraryPlacement, FallbackTemporaryFileIsGoneAfterAFailedLoad) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_UNRESOLVED_PATH, 2.0f, "tmpfile-fail");
  ScratchEnvironment env(/*disable_memfd=*/true);
  Module module(path);
  EXPECT_EQ(module.load_method("forward"), Error::BackendFailed);
  EXPECT_NE(last_error_message().find("kiln_test_symbol_nobody_defines"), std::string::npos) << last_error_message();
  EXPECT_FALSE(module.is_method_loaded("forward"));
  EXPECT_TRUE(env.dir_is_empty());
}

TEST(LibraryPlacement, FailedMemfdLoadLeavesNoDescriptorBehind) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_UNRESOLVED_PATH, 2.0f, "memfd-fail");
  Module module(path);
  ASSERT_EQ(module.load(), Error::Ok) << last_error_message();
  const size_t fds = open_descriptors();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(module.load_method("forward"), Error::BackendFailed);
  EXPECT_EQ(open_descriptors(), fds);
}

// Executes race with unload_method on the same Module: every execute either
// finds the method loaded or loads it again, and always computes the right
// result (an execute once looked the method up again after loading it, and
// found nothing if another thread had unloaded it in between).
TEST(Concurrency, ExecutesRacingUnloadsAllSucceed) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_PATH, 3.0f, "unload-race");
  Module module(path);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::atomic<int> unloads{0};
  std::thread unloader([&] {
    while (!stop.load()) {
      if (module.unload_method("forward") == Error::Ok) ++unloads;
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> x(4, static_cast<float>(t));
      // Until the unloader has really interleaved (capped, so a stuck
      // unloader fails the check below instead of hanging).
      for (int i = 0; i < 100000 && (i < 100 || unloads.load() < 20); ++i) {
        auto out = module.forward({vector_tensor(x)});
        if (!out.ok() || (*out)[0].data<float>()[3] != 3.0f * t) ++failures;
      }
    });
  for (auto& th : threads) th.join();
  stop = true;
  unloader.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(unloads.load(), 20);  // the race was really exercised
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// A library that puts one handle in two output slots (a tensor returned twice)
// gets two outputs sharing one tensor, and the handle is freed once: before,
// the second slot's delete freed it again and the process aborted.
TEST(OutputHandles, OneHandleInTwoSlotsIsReturnedTwiceAndFreedOnce) {
  testing_util::TempDir dir("kiln-duplicate-output");
  ProgramWriter writer;
  MethodInfo method = fake_forward_method();
  method.outputs.push_back(method.outputs[0]);
  method.outputs[1].name = "y_again";
  const float scale = 2.0f;
  std::vector<uint8_t> weights(sizeof(float));
  std::memcpy(weights.data(), &scale, sizeof(float));
  ASSERT_EQ(writer.add_method(method), Error::Ok);
  ASSERT_EQ(writer.add_named_data("lib", read_file(KILN_FAKE_MODEL_DUPLICATE_OUTPUT_PATH)), Error::Ok);
  ASSERT_EQ(writer.add_named_data("weights", weights), Error::Ok);
  const std::string path = dir.file("dup.kiln");
  ASSERT_EQ(writer.write(path), Error::Ok) << last_error_message();
  Module module(path);
  for (int call = 0; call < 3; ++call) {
    std::vector<float> x = {1, 2, 3};
    auto out = module.forward({vector_tensor(x)});
    ASSERT_TRUE(out.ok()) << last_error_message();
    ASSERT_EQ(out->size(), 2u);
    EXPECT_EQ((*out)[0].storage().get(), (*out)[1].storage().get());
    EXPECT_EQ((*out)[1].data<float>()[2], 6.0f);
  }
}

}  // namespace
}  // namespace kiln
