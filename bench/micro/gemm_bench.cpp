// Decode-style matrix products (M = 1, bfloat16) through Kiln's
// aoti_torch_cuda_mm_out shim: as a model library calls it with an nn.Linear
// weight W [N, K] (mm(x, W^T), which takes the GEMV kernel), against the same
// product with the same weight values stored as W^T [K, N] row-major (which
// the GEMV kernel does not take: cuBLASLt), with a device-to-device copy of
// the same weight bytes as the bandwidth reference. Built with -DKILN_WITH_CUDA=ON as <build>/kiln-gemm-bench.
//   <build>/kiln-gemm-bench
// (a build directory copied from another machine first needs the library
// paths of scripts/gpu_env.sh). PyTorch's F.linear on the same shapes:
// bench/micro/gemm_bench_torch.py. The GEMM tests behind these paths run in
// the GPU test suite (tests/gpu/test_cuda_unit.py).
//
// Each product is checked, from Kiln's debug log, to take the path it is
// named after. Every timed call (and copy) starts with L2 flushed
// by a memset of 4x the L2 size, outside the timed range, so weights come from
// HBM as in a real decode step whose weights do not fit in L2; the time is the
// median of 50 calls after 5 warm-up calls, between CUDA events on the stream.
// GB/s counts bytes read (weights + x) and written (out) once; the copy's
// counts its read and its write. "host us" is the shim's own CPU time per call
// (200 calls enqueued back to back, no flush), where the cuBLASLt path pays
// for its descriptors (and, without the algorithm cache, its heuristic).
//
// Exit status 1 when a product took the wrong path or the two disagree.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "cuda_bench_util.h"
#include "shims/common/shim_abi.h"
#include "shims/cuda/cuda_shims.h"
#include "kiln/cuda.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/log.h"

namespace {

using kiln::bench::kTimed;
using kiln::bench::L2Flusher;
using kiln::bench::median_ms;

constexpr int kHostCalls = 200;

struct Shape {
  int64_t K, N;
};
// Gemma-like projections (hidden 2048: q/o, k/v, MLP up and down, the
// embedding-sized output) plus a square 4096.
const Shape kShapes[] = {{2048, 2048}, {2048, 256}, {2048, 8192}, {8192, 2048}, {2048, 32768}, {4096, 4096}};

using MmFn = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle);

uint16_t to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);  // nearest even; no NaNs here
}

float from_bf16(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

AtenTensorHandle bf16_tensor(std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  AtenTensorHandle h = nullptr;
  CHECK_SHIM(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(),
                                      static_cast<int32_t>(kiln::DType::BFloat16), 1, 0, &h));
  return h;
}

void* data_of(AtenTensorHandle h) {
  void* p = nullptr;
  CHECK_SHIM(aoti_torch_get_data_ptr(h, &p));
  return p;
}

std::vector<uint16_t> random_bf16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint16_t> host(n);
  for (auto& v : host) v = to_bf16(dist(rng));
  return host;
}

void upload(void* dst, const std::vector<uint16_t>& host) {
  CHECK_CUDA(cudaMemcpy(dst, host.data(), host.size() * 2, cudaMemcpyHostToDevice));
}

// "gemv" or "cublaslt" from the debug line the plugin logs for one call.
std::string path_of_call(MmFn mm, AtenTensorHandle out, AtenTensorHandle a, AtenTensorHandle b) {
  std::fflush(stderr);
  const int saved = dup(2);
  FILE* capture = std::tmpfile();
  if (saved < 0 || capture == nullptr) return "unknown";
  dup2(fileno(capture), 2);
  const kiln::LogLevel old = kiln::log_level();
  kiln::set_log_level(kiln::LogLevel::Debug);
  const AOTITorchError rc = mm(out, a, b);
  kiln::set_log_level(old);
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string log;
  std::rewind(capture);
  char buf[512];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, capture)) > 0) log.append(buf, got);
  std::fclose(capture);
  if (rc != 0) {
    std::fprintf(stderr, "mm failed: %s\n", kiln::last_error_message().c_str());
    std::exit(1);
  }
  const bool gemv = log.find(": GEMV kernel") != std::string::npos;
  const bool lt = log.find(": cuBLASLt") != std::string::npos;
  return gemv == lt ? "unknown" : gemv ? "gemv" : "cublaslt";
}

struct Row {
  double ms = 0, host_us = 0, sum = 0, abs_sum = 0;
  std::string path;
};

// Times out = x @ b: the median of kTimed calls from HBM, the host time per
// call, and the path the product took.
Row measure(MmFn mm, const L2Flusher& l2, const Shape& s, AtenTensorHandle out, AtenTensorHandle x,
            AtenTensorHandle b) {
  Row r;
  r.path = path_of_call(mm, out, x, b);
  r.ms = median_ms(l2, [&] { CHECK_SHIM(mm(out, x, b)); });
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kHostCalls; ++i) CHECK_SHIM(mm(out, x, b));
  const auto t1 = std::chrono::steady_clock::now();
  CHECK_CUDA(cudaDeviceSynchronize());
  r.host_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / kHostCalls;
  std::vector<uint16_t> host(static_cast<size_t>(s.N));
  CHECK_CUDA(cudaMemcpy(host.data(), data_of(out), host.size() * 2, cudaMemcpyDeviceToHost));
  for (uint16_t v : host) {
    r.sum += from_bf16(v);
    r.abs_sum += std::fabs(from_bf16(v));
  }
  return r;
}

}  // namespace

int main() {
  if (!kiln::cuda::is_available()) {
    std::fprintf(stderr, "no CUDA device through Kiln: %s\n", kiln::last_error_message().c_str());
    return 1;
  }
  auto mm = reinterpret_cast<MmFn>(dlsym(RTLD_DEFAULT, "kiln_torch_cuda_mm_out"));
  if (mm == nullptr) {
    std::fprintf(stderr, "kiln_torch_cuda_mm_out is not in the global symbol scope\n");
    return 1;
  }
  bool failed = false;
  CHECK_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const L2Flusher l2;
  // Peak copy bandwidth: 1 GiB device to device.
  const size_t peak_bytes = size_t{1} << 30;
  void *src = nullptr, *dst = nullptr;
  CHECK_CUDA(cudaMalloc(&src, peak_bytes));
  CHECK_CUDA(cudaMalloc(&dst, peak_bytes));
  CHECK_CUDA(cudaMemset(src, 1, peak_bytes));
  const double peak_ms =
      median_ms(l2, [&] { CHECK_CUDA(cudaMemcpyAsync(dst, src, peak_bytes, cudaMemcpyDeviceToDevice, nullptr)); });
  const double peak_gbs = 2.0 * static_cast<double>(peak_bytes) / (peak_ms * 1e6);

  std::printf("%s (sm_%d%d, %d SMs, L2 %d MiB); bfloat16 x[1, K] @ W[N, K]^T through aoti_torch_cuda_mm_out\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  std::printf("device-to-device copy of 1 GiB: %.3f ms = %.0f GB/s (read + write)\n", peak_ms, peak_gbs);
  std::printf("ms: median of %d calls, L2 flushed before each; frac: of the copy GB/s of the same bytes\n\n", kTimed);
  std::printf("%6s %6s %8s | %8s %7s | %8s %7s %6s %6s %7s | %8s %7s %6s %7s | %7s %9s\n", "K", "N", "MB",
              "copy ms", "GB/s", "GEMV ms", "GB/s", "frac", "/peak", "host us", "Lt ms", "GB/s", "frac", "host us",
              "speedup", "sum diff");
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    const Shape& s = kShapes[i];
    const double weight_bytes = 2.0 * static_cast<double>(s.K * s.N);
    const double gemm_bytes = weight_bytes + 2.0 * static_cast<double>(s.K + s.N);
    const auto bytes = static_cast<size_t>(weight_bytes);
    const double copy_ms =
        median_ms(l2, [&] { CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, nullptr)); });
    const double copy_gbs = 2.0 * weight_bytes / (copy_ms * 1e6);
    // x [1, K]; W [N, K] row-major, seen by mm as W^T [K, N] (strides {1, K});
    // the same values stored as W^T [K, N] row-major (strides {N, 1}).
    AtenTensorHandle x = bf16_tensor({1, s.K}, {s.K, 1});
    AtenTensorHandle w_t = bf16_tensor({s.K, s.N}, {1, s.K});
    AtenTensorHandle w_t_dense = bf16_tensor({s.K, s.N}, {s.N, 1});
    AtenTensorHandle out = bf16_tensor({1, s.N}, {s.N, 1});
    upload(data_of(x), random_bf16(static_cast<size_t>(s.K), 1));
    const std::vector<uint16_t> w = random_bf16(static_cast<size_t>(s.K * s.N), 2);  // W [N, K]
    upload(data_of(w_t), w);
    std::vector<uint16_t> transposed(w.size());
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t k = 0; k < s.K; ++k) transposed[static_cast<size_t>(k * s.N + n)] = w[static_cast<size_t>(n * s.K + k)];
    upload(data_of(w_t_dense), transposed);
    const Row g = measure(mm, l2, s, out, x, w_t);
    const Row l = measure(mm, l2, s, out, x, w_t_dense);
    for (AtenTensorHandle h : {x, w_t, w_t_dense, out}) aoti_torch_delete_tensor_object(h);
    if (g.path != "gemv" || l.path != "cublaslt") {
      std::printf("%6lld %6lld: wrong path (W^T view took %s, W^T dense took %s)\n", static_cast<long long>(s.K),
                  static_cast<long long>(s.N), g.path.c_str(), l.path.c_str());
      failed = true;
    }
    const double g_gbs = gemm_bytes / (g.ms * 1e6), l_gbs = gemm_bytes / (l.ms * 1e6);
    // The same product both ways: the output sums agree to bf16 rounding.
    const double sum_diff = std::fabs(g.sum - l.sum) / std::max(g.abs_sum, 1e-30);
    if (!(sum_diff < 1e-2)) {
      std::printf("%6lld %6lld: the two paths disagree (relative sum difference %.1e)\n",
                  static_cast<long long>(s.K), static_cast<long long>(s.N), sum_diff);
      failed = true;
    }
    std::printf("%6lld %6lld %8.1f | %8.4f %7.0f | %8.4f %7.0f %6.2f %6.2f %7.1f | %8.4f %7.0f %6.2f %7.1f | %6.2fx %9.1e\n",
                static_cast<long long>(s.K), static_cast<long long>(s.N), weight_bytes / 1e6, copy_ms, copy_gbs, g.ms,
                g_gbs, g_gbs / copy_gbs, g_gbs / peak_gbs, g.host_us, l.ms, l_gbs, l_gbs / copy_gbs, l.host_us,
                l.ms / g.ms, sum_diff);
  }
  CHECK_CUDA(cudaFree(src));
  CHECK_CUDA(cudaFree(dst));
  return failed ? 1 : 0;
}
