// Kiln's attention kernels side by side on the GPU: the scalar tiled kernel
// against the kernel plan_attention picks (the tensor-core kernel for
// prefill, the decode kernel for decode), on the same inputs, called directly
// (no shims, no model). Decode problems also time the split-KV kernel the
// decode kernel replaced, on a line of their own. Built with -DKILN_WITH_CUDA=ON as <build>/kiln-attention-bench.
//   <build>/kiln-attention-bench [iterations=20]
// (a build directory copied from another machine first needs the library
// paths of scripts/gpu_env.sh). PyTorch's SDPA on the same problems:
// bench/micro/attention_bench_torch.py. The attention kernels' tests run in
// the GPU test suite (tests/gpu/test_cuda_unit.py).
// Prints one line per problem: milliseconds per call (median of 5 runs of
// `iterations` back-to-back launches, timed with CUDA events) for each
// kernel, the speed-up, the planned kernel's TFLOP/s, and the largest
// difference between the two outputs (a sanity check, not a test). Exits
// non-zero when the planner does not pick the kernel a problem expects.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "devices/cuda/kernels/attention_kernel.h"
#include "devices/cuda/kernels/attention_mma_kernel.h"
#include "cuda_bench_util.h"  // CHECK_CUDA

namespace {

using kiln::DType;
using kiln::cudadev::AttentionParams;
using kiln::cudadev::AttentionPlan;

uint16_t to_bits(float f, DType dt) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (dt == DType::BFloat16)
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);  // nearest even
  // float16 for values in [-1, 1] (normal or zero; no inf/NaN here).
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | ((x & 0x7fffffu) >> 13));
}

float from_bits(uint16_t b, DType dt) {
  uint32_t x;
  if (dt == DType::BFloat16) {
    x = static_cast<uint32_t>(b) << 16;
  } else {
    const uint32_t sign = (b & 0x8000u) << 16, exp = (b >> 10) & 0x1f, mant = b & 0x3ffu;
    x = exp == 0 ? sign : sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

enum class Expect { TensorCores, Decode };

struct Problem {
  DType dtype;
  int64_t B, H, Hk, L, S, E;  // H query heads over Hk key/value heads
  bool causal;
  Expect expect;  // the kernel plan_attention must pick
};

// Median milliseconds per launch of `plan` (`workspace`: its scratch, or null).
double time_plan(const AttentionParams& p, const AttentionPlan& plan, void* workspace, int iters) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i)  // warm-up (module loading, clocks)
    if (kiln::cudadev::launch_attention(p, plan, workspace, nullptr) != kiln::Error::Ok) {
      std::fprintf(stderr, "launch failed: %s\n", kiln::last_error_message().c_str());
      std::exit(1);
    }
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    CHECK_CUDA(cudaEventRecord(start));
    for (int i = 0; i < iters; ++i) (void)kiln::cudadev::launch_attention(p, plan, workspace, nullptr);
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    runs.push_back(static_cast<double>(ms) / iters);
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

void run(const Problem& pr, int iters) {
  const size_t q_n = static_cast<size_t>(pr.B * pr.H * pr.L * pr.E),
               kv_n = static_cast<size_t>(pr.B * pr.Hk * pr.S * pr.E);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto random_bits = [&](size_t n) {
    std::vector<uint16_t> v(n);
    for (auto& x : v) x = to_bits(dist(rng), pr.dtype);
    return v;
  };
  const auto hq = random_bits(q_n), hk = random_bits(kv_n), hv = random_bits(kv_n);
  void *q, *k, *v, *out_tiled, *out_tc;
  CHECK_CUDA(cudaMalloc(&q, q_n * 2));
  CHECK_CUDA(cudaMalloc(&k, kv_n * 2));
  CHECK_CUDA(cudaMalloc(&v, kv_n * 2));
  CHECK_CUDA(cudaMalloc(&out_tiled, q_n * 2));
  CHECK_CUDA(cudaMalloc(&out_tc, q_n * 2));
  CHECK_CUDA(cudaMemcpy(q, hq.data(), q_n * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(k, hk.data(), kv_n * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(v, hv.data(), kv_n * 2, cudaMemcpyHostToDevice));

  AttentionParams p;
  p.q = q;
  p.k = k;
  p.v = v;
  p.dtype = pr.dtype;
  p.B = pr.B;
  p.Hq = pr.H;
  p.Hk = pr.Hk;
  p.L = pr.L;
  p.S = pr.S;
  p.E = p.Ev = pr.E;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(pr.E)));
  p.causal = pr.causal;
  const int64_t q_str[4] = {pr.H * pr.L * pr.E, pr.L * pr.E, pr.E, 1};
  const int64_t kv_str[4] = {pr.Hk * pr.S * pr.E, pr.S * pr.E, pr.E, 1};
  for (int d = 0; d < 4; ++d) {
    p.q_strides[d] = p.out_strides[d] = q_str[d];
    p.k_strides[d] = p.v_strides[d] = kv_str[d];
  }

  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  AttentionParams pt = p, pc = p;
  pt.out = out_tiled;
  pc.out = out_tc;
  const AttentionPlan tiled;  // default plan: the tiled kernel
  const AttentionPlan tc = kiln::cudadev::plan_attention(pc, sms, true);
  if (pr.expect == Expect::TensorCores && !tc.tensor_core) {
    std::fprintf(
        stderr, "the planner does not pick the tensor-core kernel here: %s\n",
        kiln::cudadev::mma_attention_unsupported(pc) ? kiln::cudadev::mma_attention_unsupported(pc) : "?");
    std::exit(1);
  }
  if (pr.expect == Expect::Decode && !tc.decode) {
    std::fprintf(stderr, "the planner does not pick the decode kernel for L=%lld S=%lld E=%lld\n",
                 static_cast<long long>(pr.L), static_cast<long long>(pr.S), static_cast<long long>(pr.E));
    std::exit(1);
  }
  void* workspace = nullptr;
  if (tc.workspace_bytes > 0) CHECK_CUDA(cudaMalloc(&workspace, tc.workspace_bytes));
  const double ms_tiled = time_plan(pt, tiled, nullptr, iters);
  const double ms_tc = time_plan(pc, tc, workspace, iters);
  char plan_name[32];
  if (tc.tensor_core)
    std::snprintf(plan_name, sizeof(plan_name), "tcore");
  else if (tc.decode)
    std::snprintf(plan_name, sizeof(plan_name), "decode%lld", static_cast<long long>(tc.splits));
  else
    std::snprintf(plan_name, sizeof(plan_name), "split%lld", static_cast<long long>(tc.splits));

  std::vector<uint16_t> a(q_n), b(q_n);
  CHECK_CUDA(cudaMemcpy(a.data(), out_tiled, q_n * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(b.data(), out_tc, q_n * 2, cudaMemcpyDeviceToHost));
  double max_diff = 0;
  for (size_t i = 0; i < q_n; ++i)
    max_diff = std::max(
        max_diff, static_cast<double>(std::fabs(from_bits(a[i], pr.dtype) - from_bits(b[i], pr.dtype))));
  // 2 matmuls of 2 * L * S * E flops each; causal does about half of them.
  const double flops = 4.0 * pr.B * pr.H * pr.L * pr.S * pr.E * (pr.causal ? 0.5 : 1.0);
  std::printf("%-9s %2lld %3lld %3lld %5lld %5lld %4lld %-6s %-8s %10.4f %10.4f %8.1fx %9.1f %10.2e\n",
              kiln::dtype_name(pr.dtype), static_cast<long long>(pr.B), static_cast<long long>(pr.H),
              static_cast<long long>(pr.Hk), static_cast<long long>(pr.L), static_cast<long long>(pr.S),
              static_cast<long long>(pr.E), pr.causal ? "yes" : "no", plan_name, ms_tiled, ms_tc, ms_tiled / ms_tc,
              flops / (ms_tc * 1e-3) / 1e12, max_diff);
  if (tc.decode) {
    // The split-KV kernel the decode kernel replaced, into the tiled output
    // buffer (already compared above).
    const AttentionPlan split = kiln::cudadev::plan_attention(pt, sms, true, /*decode=*/false);
    void* split_ws = nullptr;
    if (split.workspace_bytes > 0) CHECK_CUDA(cudaMalloc(&split_ws, split.workspace_bytes));
    const double ms_split = time_plan(pt, split, split_ws, iters);
    std::printf("%-9s %2s %3s %3s %5s %5s %4s %-6s split%-3lld %10s %10.4f   (decode kernel %.1fx faster)\n", "", "",
                "", "", "", "", "", "", static_cast<long long>(split.splits), "", ms_split, ms_split / ms_tc);
    if (split_ws != nullptr) CHECK_CUDA(cudaFree(split_ws));
  }
  for (void* ptr : {q, k, v, out_tiled, out_tc, workspace})
    if (ptr != nullptr) CHECK_CUDA(cudaFree(ptr));
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  CHECK_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const auto available = kiln::cudadev::mma_attention_available(0);
  if (!available.ok() || !available.value()) {
    std::fprintf(stderr, "%s (sm_%d%d): the tensor-core attention kernel cannot run here%s%s\n", prop.name,
                 prop.major, prop.minor, available.ok() ? "" : ": ",
                 available.ok() ? "" : kiln::last_error_message().c_str());
    return 1;
  }
  std::printf("%s (sm_%d%d, %d SMs); ms per call, median of 5 x %d launches\n", prop.name, prop.major,
              prop.minor, prop.multiProcessorCount, iters);
  std::printf("%-9s %2s %3s %3s %5s %5s %4s %-6s %-8s %10s %10s %9s %9s %10s\n", "dtype", "B", "H", "Hkv", "L",
              "S", "E", "causal", "plan", "tiled ms", "plan ms", "speed-up", "TFLOP/s", "max|diff|");
  constexpr Expect kTc = Expect::TensorCores;
  const Problem problems[] = {
      {DType::BFloat16, 1, 16, 16, 512, 512, 64, true, kTc},
      {DType::BFloat16, 1, 16, 16, 1024, 1024, 64, true, kTc},
      {DType::BFloat16, 1, 16, 16, 2048, 2048, 64, true, kTc},
      {DType::BFloat16, 1, 16, 16, 1024, 1024, 64, false, kTc},
      {DType::Float16, 1, 16, 16, 1024, 1024, 64, true, kTc},
      {DType::BFloat16, 1, 16, 16, 1024, 1024, 128, true, kTc},
      {DType::BFloat16, 4, 16, 16, 2048, 2048, 64, true, kTc},
      // Gemma 3 style: head dim 256, 8 query heads over 1 key/value head.
      {DType::BFloat16, 1, 8, 1, 512, 512, 256, true, kTc},
      {DType::BFloat16, 1, 8, 1, 2048, 2048, 256, true, kTc},
      {DType::Float16, 1, 8, 1, 512, 512, 256, true, kTc},
      {DType::BFloat16, 1, 8, 1, 1, 1024, 256, false, Expect::Decode},  // decode against a 1024-key cache
      {DType::BFloat16, 1, 8, 1, 1, 4096, 256, false, Expect::Decode},
      {DType::Float16, 1, 8, 1, 1, 1024, 256, false, Expect::Decode},
      {DType::BFloat16, 1, 32, 8, 1, 4096, 128, false, Expect::Decode},  // Llama style: 4 query heads per k/v head
      {DType::BFloat16, 8, 8, 1, 1, 1024, 256, false, Expect::Decode},   // a batch of 8 Gemma decodes
  };
  for (const Problem& pr : problems) run(pr, iters);
  return 0;
}
