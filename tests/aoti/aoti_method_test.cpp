// The delegate end to end with a stand-in model library (fixtures/fake_model.cpp)
// packed into a real program file: load, weights, execute, missing shims, and
// load/unload cycles that must leave descriptors and memory flat.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "fake_program.h"
#include "kiln/module.h"
#include "program/program_writer.h"

namespace kiln {
namespace {

TEST(AotiMethod, RunsTheLibraryWithItsWeights) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_PATH, 3.0f, "fake");
  Module module(path);
  ASSERT_EQ(module.load(), Error::Ok) << last_error_message();
  std::vector<float> x = {1, 2, 3, 4, 5};
  auto out = module.forward({vector_tensor(x)});
  ASSERT_TRUE(out.ok()) << last_error_message();
  ASSERT_EQ(out->size(), 1u);
  ASSERT_EQ((*out)[0].sizes(), std::vector<int64_t>{5});
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ((*out)[0].data<float>()[i], 3.0f * x[i]);
  EXPECT_EQ(x[0], 1.0f);  // the caller's input is untouched
}

// Two methods with different libraries, loaded one after the other: each must
// run its own library (a reused /proc/self/fd path once made glibc hand the
// second method the first one's library).
TEST(AotiMethod, EachMethodRunsItsOwnLibrary) {
  ProgramWriter writer;
  for (auto [name, lib_path] : {std::pair{"forward", KILN_FAKE_MODEL_PATH}, {"negated", KILN_FAKE_MODEL_NEGATE_PATH}}) {
    MethodInfo method;
    method.name = name;
    method.backend = "aoti";
    method.device = "cpu";
    method.inputs = {TensorSpec{"x", DType::Float32, {DimSpec{2, false, 0, -1, ""}}}};
    method.outputs = method.inputs;
    method.library_key = std::string(name) + "_lib";
    method.weights_key = "weights";
    auto lib = read_file(lib_path);
    ASSERT_EQ(writer.add_named_data(method.library_key, lib), Error::Ok);
    ASSERT_EQ(writer.add_method(method), Error::Ok);
  }
  float scale = 2.0f;
  ASSERT_EQ(writer.add_named_data("weights", std::span(reinterpret_cast<const uint8_t*>(&scale), 4)), Error::Ok);
  const testing_util::TempDir dir;
  const std::string path = dir.file("two-libs.kiln");
  ASSERT_EQ(writer.write(path), Error::Ok) << last_error_message();
  Module module(path);
  std::vector<float> x = {1, 2};
  auto a = module.execute("forward", {vector_tensor(x)});
  auto b = module.execute("negated", {vector_tensor(x)});
  ASSERT_TRUE(a.ok() && b.ok()) << last_error_message();
  EXPECT_EQ((*a)[0].data<float>()[1], 4.0f);
  EXPECT_EQ((*b)[0].data<float>()[1], -4.0f);
}

// A program given as bytes runs like the file it came from, after the caller
// has overwritten and freed its buffer: the module holds its own sealed copy.
TEST(AotiMethod, AProgramFromBytesRunsFromItsOwnSealedCopy) {
  const testing_util::TempDir dir;
  std::vector<uint8_t> bytes = read_file(write_program(dir, KILN_FAKE_MODEL_PATH, 2.0f, "fake-bytes").c_str());
  auto module = Module::from_bytes(Runtime::default_runtime(), bytes);
  ASSERT_TRUE(module.ok()) << last_error_message();
  std::fill(bytes.begin(), bytes.end(), uint8_t{0xFF});
  bytes.clear();
  bytes.shrink_to_fit();
  std::vector<float> x = {1, 2};
  auto out = (*module)->forward({vector_tensor(x)});
  ASSERT_TRUE(out.ok()) << last_error_message();
  EXPECT_EQ((*out)[0].data<float>()[1], 4.0f);
  // Garbage bytes make a module whose load names the problem.
  const std::vector<uint8_t> garbage(100, uint8_t{7});
  auto bad = Module::from_bytes(Runtime::default_runtime(), garbage);
  ASSERT_TRUE(bad.ok()) << last_error_message();
  EXPECT_EQ((*bad)->load(), Error::InvalidProgram);
}

TEST(AotiMethod, InputsOutsideTheContractAreRefusedByName) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_PATH, 1.0f, "fake-contract");
  Module module(path);
  std::vector<float> too_long(17, 1.0f);
  auto out = module.forward({vector_tensor(too_long)});
  EXPECT_EQ(out.error(), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("input 0 ('x') dim 0 is 17"), std::string::npos) << last_error_message();
}

TEST(AotiMethod, MissingShimsAreListedTogetherBeforeLoading) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_MISSING_SHIMS_PATH, 1.0f, "fake-missing");
  Module module(path);
  ASSERT_EQ(module.load(), Error::Ok);
  EXPECT_EQ(module.load_method("forward"), Error::MissingShim);
  const std::string& message = last_error_message();
  EXPECT_NE(message.find("aoti_torch_cpu_kiln_test_op_that_does_not_exist"), std::string::npos) << message;
  EXPECT_NE(message.find("aoti_torch_cpu_another_missing_op"), std::string::npos) << message;
  EXPECT_FALSE(module.is_method_loaded("forward"));
}

TEST(AotiMethod, UnknownOptionFailsLoadAndKeepsTheModuleUnloaded) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_PATH, 1.0f, "fake-options");
  Module module(path);
  LoadBackendOptionsMap options;
  BackendOptions aoti;
  aoti.set("not_an_option", 3);
  options.set_options("aoti", aoti);
  EXPECT_EQ(module.load(options), Error::InvalidArgument);
  EXPECT_FALSE(module.is_loaded());
  EXPECT_EQ(module.load(), Error::Ok);  // a good load afterwards works
}

// Each load gets its own instance of the library (LiveCount starts at 0 and the
// output offset is LiveCount - 1 = 0); after 1000 load/unload cycles nothing
// has accumulated: descriptors, mappings and resident memory stay flat. If
// dlclose did not really unload (GNU-unique symbols), the mappings would grow.
// One load / execute / unload of a fake model program with scale 2: y[1] must be
// 4 (offset 0: a fresh library instance each time).
void load_run_unload(const std::string& path) {
  std::vector<float> x = {1, 2};
  Module module(path);
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << last_error_message();
  auto out = module.forward({vector_tensor(x)});
  ASSERT_TRUE(out.ok()) << last_error_message();
  ASSERT_EQ((*out)[0].data<float>()[1], 4.0f);
}

TEST(AotiMethod, AThousandLoadUnloadCyclesLeaveNothingBehind) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_PATH, 2.0f, "fake-cycles");
  auto cycle = [&] { load_run_unload(path); };
  for (int i = 0; i < 10; ++i) cycle();  // warm up allocator caches
  const size_t fds = open_descriptors(), maps = file_mappings(), rss = resident_kib();
  for (int i = 0; i < 1000; ++i) cycle();
  EXPECT_EQ(open_descriptors(), fds);
  EXPECT_LE(file_mappings(), maps + 2);
  EXPECT_LT(resident_kib(), rss + 2048) << "resident memory grew by " << resident_kib() - rss << " KiB";
}

// A library with its own static libstdc++ (as AOTInductor's CUDA libraries are
// when g++ 13 on Ubuntu 24.04 builds them) mallocs an exception emergency pool
// of about 72 KiB at dlopen that libstdc++ never frees by itself; unloading
// must give it back. Heap bytes in use are counted, not resident memory, so a
// 72 KiB-per-cycle hold cannot hide in the allocator's caching.
TEST(AotiMethod, LibraryWithItsOwnLibstdcxxGivesItsHeapBackOnUnload) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_STATIC_LIBSTDCXX_PATH, 2.0f, "fake-static-libstdcxx");
  auto cycle = [&] { load_run_unload(path); };
  for (int i = 0; i < 5; ++i) cycle();
  const size_t maps = file_mappings(), heap = heap_in_use_bytes();
  constexpr int kCycles = 100;
  for (int i = 0; i < kCycles; ++i) cycle();
  const double grown_kib_per_cycle =
      (static_cast<double>(heap_in_use_bytes()) - static_cast<double>(heap)) / 1024.0 / kCycles;
  EXPECT_LT(grown_kib_per_cycle, 4.0) << "the heap grew by " << grown_kib_per_cycle << " KiB per load/unload cycle";
  EXPECT_LE(file_mappings(), maps + 2);  // really unloaded, despite libstdc++'s GNU-unique symbols
}

TEST(AotiMethod, ConcurrentExecuteFromEightThreads) {
  const testing_util::TempDir dir;
  auto path = write_program(dir, KILN_FAKE_MODEL_PATH, 5.0f, "fake-threads");
  Module module(path);
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << last_error_message();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> x(8, static_cast<float>(t));
      for (int i = 0; i < 50; ++i) {
        auto out = module.forward({vector_tensor(x)});
        if (!out.ok() || (*out)[0].data<float>()[7] != 5.0f * t) ++failures;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace kiln
