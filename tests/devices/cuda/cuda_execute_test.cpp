// The CUDA execute path end to end with a stand-in model library
// (fixtures/fake_cuda_model.cpp, packed at build time): CPU inputs copied to
// the device and outputs back, zero-copy device inputs, keep_outputs_on_device,
// the three stream policies, device placement errors and the refusal of a
// library built for another GPU. Device data is moved with the test's own
// cudaMemcpy, never Kiln's copy path.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/cuda.h"
#include "kiln/module.h"

namespace {

using kiln::BackendOptions;
using kiln::Device;
using kiln::DeviceType;
using kiln::DType;
using kiln::Error;
using kiln::LoadBackendOptionsMap;
using kiln::Module;
using kiln::Tensor;

// The programs are packed beside this executable at build time. Found through
// /proc/self/exe rather than a compiled-in path, so the build directory may be
// moved or copied to another machine under another root.
std::string program_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = exe.parent_path() / "fake_cuda_programs";
    if (std::filesystem::is_directory(beside)) return beside.string();
  }
  return KILN_FAKE_CUDA_PROGRAM_DIR;
}
const std::string kProgram = program_dir() + "/fake_cuda.kiln";
const std::string kProgramSm50 = program_dir() + "/fake_cuda_sm50.kiln";
const std::string kGraphProgram = program_dir() + "/fake_graph.kiln";
const std::string kMutatingGraphProgram = program_dir() + "/fake_graph_mutating.kiln";
const std::string kColumnMajorProgram = program_dir() + "/fake_cuda_colmajor.kiln";
constexpr float kScale = 3.0f;  // the weights the generator packed

LoadBackendOptionsMap aoti_options(BackendOptions options) {
  LoadBackendOptionsMap map;
  map.set_options("aoti", std::move(options));
  return map;
}

Tensor cpu_tensor(std::vector<float>& values) {
  return *Tensor::from_blob(values.data(), std::vector<int64_t>{static_cast<int64_t>(values.size())},
                            std::vector<int64_t>{1}, DType::Float32);
}

Tensor cuda_tensor(const std::vector<float>& values, int device = 0) {
  const std::vector<int64_t> sizes{static_cast<int64_t>(values.size())};
  auto t = Tensor::empty(sizes, DType::Float32, Device{DeviceType::CUDA, device});
  EXPECT_TRUE(t.ok()) << kiln::last_error_message();
  EXPECT_EQ(cudaMemcpy(t->data_ptr(), values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  return *t;
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  std::vector<T> out(static_cast<size_t>(t.numel()));
  if (t.device().is_cpu()) {
    std::memcpy(out.data(), t.data_ptr(), out.size() * sizeof(T));
  } else {
    EXPECT_EQ(cudaMemcpy(out.data(), t.data_ptr(), out.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  }
  return out;
}

// info output: {stream passed to Run, current stream inside Run, device}.
std::vector<int64_t> run_facts(const std::vector<Tensor>& outputs) { return values_of<int64_t>(outputs.at(1)); }

class CudaExecute : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(kiln::cuda::is_available()) << kiln::last_error_message(); }
};

TEST_F(CudaExecute, CpuInputsAreCopiedInAndOutputsComeBackToTheHost) {
  Module module(kProgram);
  ASSERT_EQ(module.load(), Error::Ok) << kiln::last_error_message();
  std::vector<float> x = {1, -2, 3.5f, 0, 8};
  auto out = module.forward({cpu_tensor(x)});
  ASSERT_TRUE(out.ok()) << kiln::last_error_message();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_TRUE((*out)[0].device().is_cpu());
  EXPECT_TRUE((*out)[1].device().is_cpu());
  const auto y = values_of<float>((*out)[0]);
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], kScale * x[i]);
  const auto facts = run_facts(*out);
  EXPECT_NE(facts[0], 0) << "per_method: Run gets the method's own stream, not the default one";
  EXPECT_EQ(facts[1], facts[0]) << "the model's stream guard made it current";
  EXPECT_EQ(facts[2], 0);
  EXPECT_EQ(x[1], -2.0f);  // the caller's input is untouched
}

TEST_F(CudaExecute, NonContiguousCpuInputsAreCopiedByValue) {
  Module module(kProgram);
  std::vector<float> storage = {1, 100, 2, 100, 3, 100, 4, 100};
  auto strided = Tensor::from_blob(storage.data(), std::vector<int64_t>{4}, std::vector<int64_t>{2}, DType::Float32);
  ASSERT_TRUE(strided.ok());
  auto out = module.forward({*strided});
  ASSERT_TRUE(out.ok()) << kiln::last_error_message();
  EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{3, 6, 9, 12}));
}

TEST_F(CudaExecute, DeviceInputsAreZeroCopyAndOutputsStayOnTheDevice) {
  Module module(kProgram);
  const std::vector<float> x = {2, 4, 6};
  auto out = module.forward({cuda_tensor(x)});
  ASSERT_TRUE(out.ok()) << kiln::last_error_message();
  EXPECT_EQ((*out)[0].device(), (Device{DeviceType::CUDA, 0}));
  EXPECT_EQ((*out)[1].device(), (Device{DeviceType::CUDA, 0}));
  EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{6, 12, 18}));
}

TEST_F(CudaExecute, KeepOutputsOnDeviceAppliesToCpuInputs) {
  Module module(kProgram);
  BackendOptions o;
  o.set("keep_outputs_on_device", true);
  ASSERT_EQ(module.load(aoti_options(o)), Error::Ok) << kiln::last_error_message();
  std::vector<float> x = {1, 2};
  auto out = module.forward({cpu_tensor(x)});
  ASSERT_TRUE(out.ok()) << kiln::last_error_message();
  EXPECT_EQ((*out)[0].device().type, DeviceType::CUDA);
  EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{3, 6}));
}

TEST_F(CudaExecute, EachMethodHasItsOwnStreamByDefault) {
  Module module(kProgram);
  std::vector<float> x = {1};
  auto a = module.execute("forward", {cpu_tensor(x)});
  auto b = module.execute("second", {cpu_tensor(x)});
  auto a2 = module.execute("forward", {cpu_tensor(x)});
  ASSERT_TRUE(a.ok() && b.ok() && a2.ok()) << kiln::last_error_message();
  EXPECT_NE(run_facts(*a)[0], run_facts(*b)[0]);
  EXPECT_EQ(run_facts(*a)[0], run_facts(*a2)[0]) << "a method keeps its stream across runs";
  EXPECT_NE(run_facts(*a)[0], 0);
}

TEST_F(CudaExecute, SharedStreamIsOnePerModule) {
  BackendOptions o;
  o.set("stream", "shared");
  Module first(kProgram), second(kProgram);
  ASSERT_EQ(first.load(aoti_options(o)), Error::Ok) << kiln::last_error_message();
  ASSERT_EQ(second.load(aoti_options(o)), Error::Ok) << kiln::last_error_message();
  std::vector<float> x = {1};
  auto a = first.execute("forward", {cpu_tensor(x)});
  auto b = first.execute("second", {cpu_tensor(x)});
  auto c = second.execute("forward", {cpu_tensor(x)});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << kiln::last_error_message();
  EXPECT_NE(run_facts(*a)[0], 0);
  EXPECT_EQ(run_facts(*a)[0], run_facts(*b)[0]) << "methods of one module share a stream";
  EXPECT_NE(run_facts(*a)[0], run_facts(*c)[0]) << "another module has its own";
}

TEST_F(CudaExecute, CallerStreamIsTheThreadsCurrentStream) {
  BackendOptions o;
  o.set("stream", "caller");
  Module module(kProgram);
  ASSERT_EQ(module.load(aoti_options(o)), Error::Ok) << kiln::last_error_message();
  auto stream = kiln::cuda::create_stream(0);
  ASSERT_TRUE(stream.ok()) << kiln::last_error_message();
  std::vector<float> x = {5};
  {
    kiln::cuda::StreamGuard guard(0, *stream);
    ASSERT_EQ(guard.status(), Error::Ok) << kiln::last_error_message();
    EXPECT_EQ(*kiln::cuda::current_stream(0), *stream);
    auto out = module.forward({cpu_tensor(x)});
    ASSERT_TRUE(out.ok()) << kiln::last_error_message();
    EXPECT_EQ(run_facts(*out)[0], reinterpret_cast<int64_t>(*stream));
    EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{15}));
  }
  EXPECT_EQ(*kiln::cuda::current_stream(0), nullptr) << "the guard restored the legacy default stream";
  auto out = module.forward({cpu_tensor(x)});
  ASSERT_TRUE(out.ok()) << kiln::last_error_message();
  EXPECT_EQ(run_facts(*out)[0], 0) << "no current stream: the legacy default stream";
  EXPECT_EQ(kiln::cuda::destroy_stream(0, *stream), Error::Ok);
}

TEST_F(CudaExecute, DeviceIndexOptionPlacesTheContainer) {
  BackendOptions o;
  o.set("device_index", kiln::cuda::device_count());  // one past the last GPU
  Module module(kProgram);
  ASSERT_EQ(module.load(aoti_options(o)), Error::Ok);
  EXPECT_EQ(module.load_method("forward"), Error::NotSupported);
  EXPECT_NE(kiln::last_error_message().find("does not have"), std::string::npos) << kiln::last_error_message();
  if (kiln::cuda::device_count() < 2) GTEST_SKIP() << "placement on cuda:1 needs a second GPU";
  BackendOptions one;
  one.set("device_index", 1);
  Module on_one(kProgram);
  ASSERT_EQ(on_one.load(aoti_options(one)), Error::Ok);
  std::vector<float> x = {1, 2};
  auto out = on_one.forward({cpu_tensor(x)});
  ASSERT_TRUE(out.ok()) << kiln::last_error_message();
  EXPECT_EQ(run_facts(*out)[2], 1);
  auto wrong = on_one.forward({cuda_tensor({1, 2}, 0)});
  EXPECT_EQ(wrong.error(), Error::InvalidArgument);
  EXPECT_NE(kiln::last_error_message().find("input 0 ('x') is on cuda:0 but the method runs on cuda:1"),
            std::string::npos)
      << kiln::last_error_message();
}

TEST_F(CudaExecute, ComputeCapabilityMatchesTheDriver) {
  int major = 0, minor = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  auto cc = kiln::cuda::compute_capability(0);
  ASSERT_TRUE(cc.ok()) << kiln::last_error_message();
  EXPECT_EQ(*cc, major * 10 + minor);
  EXPECT_FALSE(kiln::cuda::compute_capability(kiln::cuda::device_count()).ok());
}

TEST_F(CudaExecute, LibraryBuiltForAnotherGpuIsRefusedAtLoad) {
  int major = 0, minor = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  Module module(kProgramSm50);
  ASSERT_EQ(module.load(), Error::Ok);
  EXPECT_EQ(module.load_method("forward"), Error::NotSupported);
  const std::string expected =
      "built for sm_50, this GPU (cuda:0) is sm_" + std::to_string(major) + std::to_string(minor);
  EXPECT_NE(kiln::last_error_message().find(expected), std::string::npos) << kiln::last_error_message();
  EXPECT_FALSE(module.is_method_loaded("forward"));
}

TEST_F(CudaExecute, ManyLoadUnloadCyclesReleaseStreams) {
  // Streams are created at load and destroyed at unload: a leak would pile up
  // driver objects; the pool's bytes in use must come back to where they were.
  std::vector<float> x = {1, 2, 3};
  auto before = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(before.ok());
  for (int i = 0; i < 50; ++i) {
    Module module(kProgram);
    ASSERT_EQ(module.load_method("forward"), Error::Ok) << kiln::last_error_message();
    auto out = module.forward({cpu_tensor(x)});
    ASSERT_TRUE(out.ok()) << kiln::last_error_message();
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto after = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->bytes_in_use, before->bytes_in_use);
}

TEST_F(CudaExecute, KernelModulesTheLibraryLoadedGoWithTheMethod) {
  // The fake library, like AOTInductor's, loads a kernel module (holding a
  // 64 MiB global) per container and never unloads it; Kiln unloads it with
  // the method. Leaked, 20 cycles would lose 1.25 GiB of GPU memory.
  std::vector<float> x = {1, 2, 3};
  auto free_bytes = [] {
    size_t free_b = 0, total = 0;
    EXPECT_EQ(cudaMemGetInfo(&free_b, &total), cudaSuccess);
    return static_cast<int64_t>(free_b);
  };
  {  // warm-up: context, pool
    Module module(kProgram);
    ASSERT_EQ(module.load_method("forward"), Error::Ok) << kiln::last_error_message();
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const int64_t before = free_bytes();
  for (int i = 0; i < 20; ++i) {
    Module module(kProgram);
    ASSERT_EQ(module.load_method("forward"), Error::Ok) << kiln::last_error_message();
    auto out = module.forward({cpu_tensor(x)});
    ASSERT_TRUE(out.ok()) << kiln::last_error_message();
    EXPECT_LT(before - free_bytes(), int64_t{200} << 20) << "cycle " << i << ": kernel modules pile up";
  }
  EXPECT_LT(before - free_bytes(), int64_t{32} << 20);
}

// ---- aoti.cuda_graphs. The graph fixture's `calls` output is written by its
// kernel with the host-side run count: eager runs count up, replays repeat
// the count the recording saw.

std::vector<float> ramp(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

int64_t calls_of(const std::vector<Tensor>& outputs) { return values_of<int64_t>(outputs.at(1)).at(0); }

void expect_scaled(const Tensor& y, const std::vector<float>& x) {
  const std::vector<float> got = values_of<float>(y);
  ASSERT_EQ(got.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(got[i], kScale * x[i]) << "element " << i;
}

BackendOptions graph_options(int64_t cache_size = 8) {
  BackendOptions o;
  o.set("cuda_graphs", true);
  o.set("cuda_graph_cache_size", cache_size);
  return o;
}

TEST_F(CudaExecute, CudaGraphReplaysAfterOneWarmUpRunWithFreshInputsEachCall) {
  Module module(kGraphProgram);
  ASSERT_EQ(module.load(aoti_options(graph_options())), Error::Ok) << kiln::last_error_message();
  std::vector<int64_t> calls;
  for (int i = 0; i < 5; ++i) {
    std::vector<float> x = ramp(1000, static_cast<float>(10 * i));
    auto out = module.forward({cpu_tensor(x)});
    ASSERT_TRUE(out.ok()) << kiln::last_error_message();
    ASSERT_TRUE((*out)[0].device().is_cpu());  // CPU inputs: outputs come back to the host
    expect_scaled((*out)[0], x);
    calls.push_back(calls_of(*out));
  }
  // Warm-up (1), recording (2; the replay right after it returns 2), replays.
  EXPECT_EQ(calls, (std::vector<int64_t>{1, 2, 2, 2, 2}));
}

TEST_F(CudaExecute, CudaGraphOutputsAreNotOverwrittenByLaterReplays) {
  Module module(kGraphProgram);
  BackendOptions o = graph_options();
  o.set("keep_outputs_on_device", true);
  ASSERT_EQ(module.load(aoti_options(o)), Error::Ok) << kiln::last_error_message();
  std::vector<std::vector<float>> inputs;
  std::vector<Tensor> results;
  for (int i = 0; i < 4; ++i) {
    inputs.push_back(ramp(64, static_cast<float>(100 * i)));
    auto out = module.forward({cuda_tensor(inputs.back())});
    ASSERT_TRUE(out.ok()) << kiln::last_error_message();
    ASSERT_FALSE((*out)[0].device().is_cpu());
    results.push_back((*out)[0]);
  }
  for (size_t i = 0; i < results.size(); ++i) expect_scaled(results[i], inputs[i]);
}

TEST_F(CudaExecute, CudaGraphOutputsOutliveTheModuleAndItsStream) {
  std::vector<Tensor> kept;
  std::vector<std::vector<float>> inputs;
  {
    Module module(kGraphProgram);
    BackendOptions o = graph_options();
    o.set("keep_outputs_on_device", true);
    ASSERT_EQ(module.load(aoti_options(o)), Error::Ok) << kiln::last_error_message();
    for (int i = 0; i < 3; ++i) {  // eager warm-up, recording + replay, replay
      inputs.push_back(ramp(128, static_cast<float>(i)));
      auto out = module.forward({cuda_tensor(inputs.back())});
      ASSERT_TRUE(out.ok()) << kiln::last_error_message();
      kept.push_back((*out)[0]);
    }
  }  // the method's stream is destroyed here
  for (size_t i = 0; i < kept.size(); ++i) expect_scaled(kept[i], inputs[i]);
  kept.clear();  // freed after their stream is gone: must not touch it
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// stream=caller from a thread on the legacy default stream (a torch caller's
// usual case): CUDA cannot record that stream, so the graph is recorded on a
// side stream and replayed on the caller's.
TEST_F(CudaExecute, CudaGraphOnTheLegacyDefaultStreamIsRecordedAsideAndReplayedThere) {
  Module module(kGraphProgram);
  BackendOptions o = graph_options();
  o.set("stream", "caller");
  o.set("keep_outputs_on_device", true);
  ASSERT_EQ(module.load(aoti_options(o)), Error::Ok) << kiln::last_error_message();
  ASSERT_EQ(*kiln::cuda::current_stream(0), nullptr);
  std::vector<int64_t> calls;
  std::vector<std::vector<float>> inputs;
  std::vector<Tensor> results;
  for (int i = 0; i < 5; ++i) {
    inputs.push_back(ramp(512, static_cast<float>(7 * i)));
    auto out = module.forward({cuda_tensor(inputs.back())});
    ASSERT_TRUE(out.ok()) << kiln::last_error_message();
    results.push_back((*out)[0]);
    calls.push_back(calls_of(*out));
  }
  EXPECT_EQ(calls, (std::vector<int64_t>{1, 2, 2, 2, 2})) << "recorded once, then replayed";
  for (size_t i = 0; i < results.size(); ++i) expect_scaled(results[i], inputs[i]);
}

TEST_F(CudaExecute, CudaGraphIsPerInputShapeWithABoundedCache) {
  Module module(kGraphProgram);
  ASSERT_EQ(module.load(aoti_options(graph_options(/*cache_size=*/1))), Error::Ok) << kiln::last_error_message();
  auto run = [&](size_t n) {
    std::vector<float> x = ramp(n, 1.0f);
    auto out = module.forward({cpu_tensor(x)});
    EXPECT_TRUE(out.ok()) << kiln::last_error_message();
    if (!out.ok()) return int64_t{-1};
    expect_scaled((*out)[0], x);
    return calls_of(*out);
  };
  EXPECT_EQ(run(8), 1);   // n=8: warm-up
  EXPECT_EQ(run(8), 2);   // recorded
  EXPECT_EQ(run(16), 3);  // n=16: its own warm-up
  EXPECT_EQ(run(16), 4);  // recorded; the cache holds one graph, so n=8's goes
  EXPECT_EQ(run(16), 4);  // replayed
  EXPECT_EQ(run(8), 5);   // n=8 was dropped: recorded again (its warm-up is done)
  EXPECT_EQ(run(8), 5);
}

TEST_F(CudaExecute, CudaGraphCaptureFailureFallsBackToEagerRuns) {
  // fake_cuda.kiln synchronises inside Run, which a recording cannot hold.
  Module module(kProgram);
  ASSERT_EQ(module.load(aoti_options(graph_options())), Error::Ok) << kiln::last_error_message();
  for (int i = 0; i < 4; ++i) {
    std::vector<float> x = ramp(32, static_cast<float>(i));
    auto out = module.forward({cpu_tensor(x)});
    ASSERT_TRUE(out.ok()) << "call " << i << ": " << kiln::last_error_message();
    expect_scaled((*out)[0], x);
  }
  // The eager fallback left the device healthy: an unrelated module still runs.
  Module other(kGraphProgram);
  std::vector<float> x = ramp(32, 5.0f);
  auto out = other.forward({cpu_tensor(x)});
  ASSERT_TRUE(out.ok()) << kiln::last_error_message();
  expect_scaled((*out)[0], x);
}

// The mutating fixture computes y = scale * x and then writes x += 1 in place.
TEST_F(CudaExecute, CudaGraphWritesInputsWrittenInPlaceIntoTheCallersBuffer) {
  Module module(kMutatingGraphProgram);
  BackendOptions o = graph_options();
  o.set("keep_outputs_on_device", true);
  ASSERT_EQ(module.load(aoti_options(o)), Error::Ok) << kiln::last_error_message();
  std::vector<float> x = ramp(64, 1.0f);
  auto refused = module.forward({cpu_tensor(x)});  // a staging copy would take the writes
  EXPECT_EQ(refused.error(), Error::InvalidArgument);
  EXPECT_NE(kiln::last_error_message().find("written in place"), std::string::npos) << kiln::last_error_message();

  Tensor dx = cuda_tensor(x);
  std::vector<int64_t> calls;
  for (int i = 0; i < 6; ++i) {
    auto out = module.forward({dx});
    ASSERT_TRUE(out.ok()) << kiln::last_error_message();
    std::vector<float> expected = x;
    for (float& v : expected) v += static_cast<float>(i);  // i earlier calls each added 1
    expect_scaled((*out)[0], expected);
    calls.push_back(calls_of(*out));
  }
  EXPECT_EQ(calls, (std::vector<int64_t>{1, 2, 2, 2, 2, 2})) << "recorded against the caller's buffer, then replayed";
  std::vector<float> after = values_of<float>(dx);
  for (size_t k = 0; k < x.size(); ++k) EXPECT_EQ(after[k], x[k] + 6.0f) << "element " << k;

  // Another buffer of the same shape is another signature: it warms up and is
  // recorded on its own, and never replays the first buffer's graph.
  std::vector<float> z = ramp(64, 500.0f);
  Tensor dz = cuda_tensor(z);
  std::vector<int64_t> z_calls;
  for (int i = 0; i < 3; ++i) {
    auto out = module.forward({dz});
    ASSERT_TRUE(out.ok()) << kiln::last_error_message();
    std::vector<float> expected = z;
    for (float& v : expected) v += static_cast<float>(i);
    expect_scaled((*out)[0], expected);
    z_calls.push_back(calls_of(*out));
  }
  EXPECT_EQ(z_calls, (std::vector<int64_t>{3, 4, 4}));
  std::vector<float> x_untouched = values_of<float>(dx);
  for (size_t k = 0; k < x.size(); ++k) EXPECT_EQ(x_untouched[k], x[k] + 6.0f) << "element " << k;

  // Back to the first buffer: its graph is still cached and replays on it.
  auto out = module.forward({dx});
  ASSERT_TRUE(out.ok()) << kiln::last_error_message();
  EXPECT_EQ(calls_of(*out), 2);
  std::vector<float> expected = x;
  for (float& v : expected) v += 6.0f;
  expect_scaled((*out)[0], expected);
}

TEST_F(CudaExecute, CudaGraphOfAnInputWrittenInPlaceStaysRightWhenTheCallerReplacesTheBuffer) {
  // A bound buffer is not kept alive by the graph: once the caller drops it,
  // its memory goes back, and a new buffer may take the same address (then the
  // recorded kernels' address is the new buffer's, and the replay is right) or
  // another one (a new signature).
  Module module(kMutatingGraphProgram);
  BackendOptions o = graph_options(/*cache_size=*/2);
  o.set("keep_outputs_on_device", true);
  ASSERT_EQ(module.load(aoti_options(o)), Error::Ok) << kiln::last_error_message();
  auto before = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(before.ok());
  for (int round = 0; round < 5; ++round) {
    std::vector<float> x = ramp(1 << 16, static_cast<float>(round));
    Tensor dx = cuda_tensor(x);
    for (int i = 0; i < 3; ++i) {
      auto out = module.forward({dx});
      ASSERT_TRUE(out.ok()) << kiln::last_error_message();
      std::vector<float> expected = x;
      for (float& v : expected) v += static_cast<float>(i);
      expect_scaled((*out)[0], expected);
    }
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto after = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(after.ok());
  // At most the two cached graphs' arenas stay (one 256 KiB output each and slack).
  EXPECT_LT(static_cast<int64_t>(after->bytes_in_use) - static_cast<int64_t>(before->bytes_in_use), int64_t{8} << 20);
}

TEST_F(CudaExecute, CudaGraphsNeedOneModelInstance) {
  Module module(kGraphProgram);
  BackendOptions o = graph_options();
  o.set("num_models", 2);
  ASSERT_EQ(module.load(aoti_options(o)), Error::Ok);  // options are checked when a method loads
  EXPECT_EQ(module.load_method("forward"), Error::InvalidArgument);
  EXPECT_NE(kiln::last_error_message().find("num_models"), std::string::npos) << kiln::last_error_message();
}

TEST_F(CudaExecute, CudaGraphMemoryIsReturnedWhenTheModuleGoes) {
  auto before = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(before.ok());
  for (int i = 0; i < 20; ++i) {
    Module module(kGraphProgram);
    ASSERT_EQ(module.load(aoti_options(graph_options())), Error::Ok) << kiln::last_error_message();
    for (int k = 0; k < 3; ++k) {
      std::vector<float> x = ramp(256, 1.0f);
      auto out = module.forward({cpu_tensor(x)});
      ASSERT_TRUE(out.ok()) << kiln::last_error_message();
    }
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto after = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->bytes_in_use, before->bytes_in_use);
}

}  // namespace

namespace {

// aoti.max_memory_bytes on a CUDA method: the 4-byte weights blob (cudaMalloc
// inside the container) and the device tensors the model creates (y: n floats,
// info: 3 int64) count; past the limit the call fails with OutOfMemory and
// the method keeps working.
TEST_F(CudaExecute, MemoryLimitRefusesWeightsAndRunsPastItWithOutOfMemory) {
  BackendOptions tiny;
  tiny.set("max_memory_bytes", 3);
  Module module(kProgram);
  auto tiny_map = aoti_options(tiny);
  EXPECT_EQ(module.load_method("forward", &tiny_map), Error::OutOfMemory);
  EXPECT_NE(kiln::last_error_message().find("weights needs 4 bytes"), std::string::npos) << kiln::last_error_message();
  EXPECT_FALSE(module.is_method_loaded("forward"));

  BackendOptions room;
  room.set("max_memory_bytes", 4 + 24 + 8 * 4);  // weights + info + 8 floats
  auto room_map = aoti_options(room);
  ASSERT_EQ(module.load_method("forward", &room_map), Error::Ok) << kiln::last_error_message();
  std::vector<float> big(16, 1.0f);
  auto failed = module.forward({cpu_tensor(big)});
  EXPECT_EQ(failed.error(), Error::OutOfMemory);
  EXPECT_NE(kiln::last_error_message().find("needs 64 bytes"), std::string::npos) << kiln::last_error_message();
  for (int i = 0; i < 3; ++i) {  // the failed run gave back what it took
    std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
    auto out = module.forward({cpu_tensor(x)});
    ASSERT_TRUE(out.ok()) << kiln::last_error_message();
    EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{3, 6, 9, 12, 15, 18, 21, 24}));
    EXPECT_EQ(module.forward({cpu_tensor(big)}).error(), Error::OutOfMemory);
  }
}

// The GPU really runs out: all but ~96 MiB of its free memory is taken by the
// test, then the model asks for a 256 MiB output. The run fails with
// OutOfMemory (not a crash, not a generic failure), and once the memory is
// back the same module runs that input correctly; a second module loaded
// beforehand works throughout.
TEST_F(CudaExecute, RealDeviceOutOfMemoryFailsTheRunAndBreaksNothing) {
  Module module(kProgram), other(kProgram);
  ASSERT_EQ(module.load_method("forward"), Error::Ok) << kiln::last_error_message();
  ASSERT_EQ(other.load_method("forward"), Error::Ok) << kiln::last_error_message();
  constexpr size_t kMiB = size_t{1} << 20;
  const size_t n = 64 * kMiB;  // floats: a 256 MiB input and output
  Tensor x = cuda_tensor(std::vector<float>(n, 2.0f));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  std::vector<void*> hog;
  for (size_t chunk = 1024 * kMiB; chunk >= kMiB;) {
    size_t free_bytes = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    if (free_bytes < 96 * kMiB + chunk) {
      chunk /= 2;
      continue;
    }
    void* p = nullptr;
    if (cudaMalloc(&p, chunk) != cudaSuccess) {
      (void)cudaGetLastError();
      chunk /= 2;
      continue;
    }
    hog.push_back(p);
  }
  auto failed = module.forward({x});
  EXPECT_EQ(failed.error(), Error::OutOfMemory) << kiln::last_error_message();
  std::vector<float> small = {1, 2};
  auto still = other.forward({cpu_tensor(small)});  // small enough for what is left
  ASSERT_TRUE(still.ok()) << kiln::last_error_message();
  EXPECT_EQ(values_of<float>((*still)[0]), (std::vector<float>{3, 6}));
  for (void* p : hog) EXPECT_EQ(cudaFree(p), cudaSuccess);

  auto out = module.forward({x});
  ASSERT_TRUE(out.ok()) << kiln::last_error_message();
  const auto y = values_of<float>((*out)[0]);
  ASSERT_EQ(y.size(), n);
  EXPECT_EQ(y.front(), 6.0f);
  EXPECT_EQ(y.back(), 6.0f);
}

// ---- inputs of any layout. The fake models read x as numel() dense floats
// from its first element, as compiled kernels read inputs in the layout they
// were compiled for; views in another layout must be copied into it first.

// A view of a device copy of `memory`: `sizes`/`strides` from element `offset`.
Tensor cuda_view(const std::vector<float>& memory, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                 int64_t offset = 0) {
  const Tensor base = cuda_tensor(memory);
  auto v = base.make_view(sizes, strides, offset);
  EXPECT_TRUE(v.ok()) << kiln::last_error_message();
  return *v;
}

Tensor cpu_view(std::vector<float>& memory, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                int64_t offset = 0) {
  auto v = cpu_tensor(memory).make_view(sizes, strides, offset);
  EXPECT_TRUE(v.ok()) << kiln::last_error_message();
  return *v;
}

TEST_F(CudaExecute, StridedAndBroadcastDeviceInputsAreLaidOutOnTheDevice) {
  Module module(kProgram);
  const std::vector<float> memory = {1, -100, 2, -100, 3, -100, 4, -100};
  auto out = module.forward({cuda_view(memory, {4}, {2})});
  ASSERT_TRUE(out.ok()) << kiln::last_error_message();
  EXPECT_EQ((*out)[0].device(), (Device{DeviceType::CUDA, 0}));
  EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{3, 6, 9, 12}));
  // Stride 0: one float seen as 16 (read densely it would reach 60 bytes past it).
  out = module.forward({cuda_view({2.5f}, {16}, {0})});
  ASSERT_TRUE(out.ok()) << kiln::last_error_message();
  EXPECT_EQ(values_of<float>((*out)[0]), std::vector<float>(16, kScale * 2.5f));
}

TEST_F(CudaExecute, OffsetAndMisalignedDeviceInputsGiveTheirOwnValues) {
  Module module(kProgram);
  const std::vector<float> memory = ramp(21, 1.0f);
  for (int64_t offset : {1, 2, 3, 4, 5}) {  // 4-20 bytes past an aligned allocation
    auto out = module.forward({cuda_view(memory, {16}, {1}, offset)});
    ASSERT_TRUE(out.ok()) << "offset " << offset << ": " << kiln::last_error_message();
    const std::vector<float> expected(memory.begin() + offset, memory.begin() + offset + 16);
    expect_scaled((*out)[0], expected);
  }
}

// A method compiled for column-major x ([2, 3], dim order (1, 0)): the model
// returns kScale * x's elements in memory order, which must be the column-major
// order whatever layout x comes in, on the host or on the device.
TEST_F(CudaExecute, InputsReachTheModelInItsCompiledLayoutFromTheHostAndTheDevice) {
  Module module(kColumnMajorProgram);
  auto meta = module.method_meta("forward");
  ASSERT_TRUE(meta.ok()) << kiln::last_error_message();
  EXPECT_EQ(meta->inputs[0].dim_order, (std::vector<uint8_t>{1, 0}));
  const std::vector<float> column_major = {3, 12, 6, 15, 9, 18};  // kScale * (1, 4, 2, 5, 3, 6)
  std::vector<float> rows = {1, 2, 3, 4, 5, 6};                   // x = [[1, 2, 3], [4, 5, 6]]
  std::vector<float> cols = {1, 4, 2, 5, 3, 6};                   // the same x, column by column
  std::vector<float> wide = {1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0};
  const std::vector<std::pair<const char*, Tensor>> inputs = {
      {"host row-major", cpu_view(rows, {2, 3}, {3, 1})},
      {"host column-major", cpu_view(cols, {2, 3}, {1, 2})},
      {"host every other column", cpu_view(wide, {2, 3}, {6, 2})},
      {"device row-major", cuda_view(rows, {2, 3}, {3, 1})},
      {"device column-major", cuda_view(cols, {2, 3}, {1, 2})},
      {"device column-major, misaligned", cuda_view({0, 1, 4, 2, 5, 3, 6}, {2, 3}, {1, 2}, 1)},
      {"device every other column", cuda_view(wide, {2, 3}, {6, 2})},
  };
  for (const auto& [what, x] : inputs) {
    auto out = module.forward({x});
    ASSERT_TRUE(out.ok()) << what << ": " << kiln::last_error_message();
    EXPECT_EQ(values_of<float>((*out)[0]), column_major) << what;
  }
}

// With graphs, inputs are laid out before the signature is taken: strided and
// dense inputs of one shape share one recording, and replays read the values
// of the view they are given.
TEST_F(CudaExecute, CudaGraphsSeeInputsInTheirCompiledLayout) {
  Module module(kGraphProgram);
  BackendOptions o = graph_options();
  o.set("keep_outputs_on_device", true);
  ASSERT_EQ(module.load(aoti_options(o)), Error::Ok) << kiln::last_error_message();
  std::vector<int64_t> calls;
  for (int i = 0; i < 6; ++i) {
    const std::vector<float> memory = ramp(130, static_cast<float>(50 * i));
    std::vector<float> expected;
    Tensor x;
    if (i % 3 == 0) {
      x = cuda_view(memory, {64}, {2});  // strided
      for (int k = 0; k < 64; ++k) expected.push_back(memory[2 * k]);
    } else if (i % 3 == 1) {
      x = cuda_view(memory, {64}, {1}, 1);  // misaligned
      expected.assign(memory.begin() + 1, memory.begin() + 65);
    } else {
      x = cuda_view(memory, {64}, {1});
      expected.assign(memory.begin(), memory.begin() + 64);
    }
    auto out = module.forward({x});
    ASSERT_TRUE(out.ok()) << "call " << i << ": " << kiln::last_error_message();
    expect_scaled((*out)[0], expected);
    calls.push_back(calls_of(*out));
  }
  EXPECT_EQ(calls, (std::vector<int64_t>{1, 2, 2, 2, 2, 2})) << "one signature: recorded once, then replayed";
}

// An input the method writes in place is never copied: a device view in
// another layout, or misaligned, is refused (the writes would go to the copy).
TEST_F(CudaExecute, InputsWrittenInPlaceInAnotherLayoutAreRefused) {
  Module module(kMutatingGraphProgram);
  const std::vector<float> memory = ramp(65, 1.0f);
  auto strided = module.forward({cuda_view(memory, {32}, {2})});
  EXPECT_EQ(strided.error(), Error::InvalidArgument);
  EXPECT_NE(kiln::last_error_message().find(
                "has strides [2] but the method was compiled for row-major strides [1]"),
            std::string::npos)
      << kiln::last_error_message();
  auto misaligned = module.forward({cuda_view(memory, {32}, {1}, 1)});
  EXPECT_EQ(misaligned.error(), Error::InvalidArgument);
  EXPECT_NE(kiln::last_error_message().find("16-byte boundary"), std::string::npos)
      << kiln::last_error_message();
  auto aligned = module.forward({cuda_view(memory, {32}, {1}, 4)});
  ASSERT_TRUE(aligned.ok()) << kiln::last_error_message();
  expect_scaled((*aligned)[0], std::vector<float>(memory.begin() + 4, memory.begin() + 36));
}

}  // namespace
