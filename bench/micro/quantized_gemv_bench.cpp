// Decode-step products with weight-only quantized weights, kernel alone:
// x[M, K] @ W^T for M = 1 and 4 on the Gemma-like shapes of kiln-gemm-bench,
// bfloat16 weights through aoti_torch_cuda_mm_out (the float GEMV kernel)
// against int8 weights through aoti_torch_cuda__weight_int8pack_mm and int4
// weights (groups of 128) through aoti_torch_cuda_int4_linear (the quantized
// GEMV kernel), with a device-to-device copy of the same bytes as the
// bandwidth reference. Built with -DKILN_WITH_CUDA=ON as
// <build>/kiln-quantized-gemv-bench (library paths: scripts/gpu_env.sh).
//
// Each call starts with L2 flushed (a memset of 4x its size, outside the timed
// range), so weights come from HBM as in a decode step whose weights do not
// fit in L2; the time is the median of 50 calls after 5 warm-up calls between
// CUDA events. GB/s counts each path's own bytes (packed weights and scales,
// x, out) read or written once; "frac" divides by the copy's GB/s.
// Correctness of these products is the GPU suite's
// (tests/gpu/test_quantized_linear.py); here each output is only checked
// to be finite.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#include "cuda_bench_util.h"
#include "shims/common/shim_abi.h"
#include "kiln/cuda.h"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace {

using kiln::bench::kTimed;
using kiln::bench::L2Flusher;
using kiln::bench::median_ms;

constexpr int64_t kGroup = 128;

struct Shape {
  int64_t K, N;
};
const Shape kShapes[] = {{2048, 2048}, {2048, 256}, {2048, 8192}, {8192, 2048}, {2048, 32768}, {4096, 4096}};

using MmFn = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle);
using Int8Fn = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle, AtenTensorHandle*);
using Int4Fn = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle, int64_t, AtenTensorHandle*);

AtenTensorHandle cuda_tensor(std::vector<int64_t> sizes, std::vector<int64_t> strides, kiln::DType dtype) {
  AtenTensorHandle h = nullptr;
  CHECK_SHIM(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(),
                                      static_cast<int32_t>(dtype), 1, 0, &h));
  return h;
}

void* data_of(AtenTensorHandle h) {
  void* p = nullptr;
  CHECK_SHIM(aoti_torch_get_data_ptr(h, &p));
  return p;
}

// Random bytes; bfloat16 values in [-1, 1) (or [lo, hi)) where `bf16` is set.
void fill(AtenTensorHandle h, size_t bytes, uint32_t seed, bool bf16, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> host(bytes);
  if (bf16) {
    std::uniform_real_distribution<float> dist(lo, hi);
    for (size_t i = 0; i + 1 < bytes; i += 2) {
      const float f = dist(rng);
      uint32_t x;
      std::memcpy(&x, &f, 4);
      const auto b = static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
      std::memcpy(&host[i], &b, 2);
    }
  } else {
    for (auto& v : host) v = static_cast<uint8_t>(rng());
  }
  CHECK_CUDA(cudaMemcpy(data_of(h), host.data(), bytes, cudaMemcpyHostToDevice));
}

bool finite_bf16(AtenTensorHandle h, size_t count) {
  std::vector<uint16_t> host(count);
  CHECK_CUDA(cudaMemcpy(host.data(), data_of(h), count * 2, cudaMemcpyDeviceToHost));
  return std::all_of(host.begin(), host.end(), [](uint16_t b) { return (b & 0x7f80u) != 0x7f80u; });
}

}  // namespace

int main() {
  if (!kiln::cuda::is_available()) {
    std::fprintf(stderr, "no CUDA device through Kiln: %s\n", kiln::last_error_message().c_str());
    return 1;
  }
  auto mm = reinterpret_cast<MmFn>(dlsym(RTLD_DEFAULT, "kiln_torch_cuda_mm_out"));
  auto int8 = reinterpret_cast<Int8Fn>(dlsym(RTLD_DEFAULT, "kiln_torch_cuda__weight_int8pack_mm"));
  auto int4 = reinterpret_cast<Int4Fn>(dlsym(RTLD_DEFAULT, "kiln_torch_cuda_int4_linear"));
  if (mm == nullptr || int8 == nullptr || int4 == nullptr) {
    std::fprintf(stderr, "a shim is not in the global symbol scope (mm_out, _weight_int8pack_mm, int4_linear)\n");
    return 1;
  }
  using kiln::DType;
  CHECK_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const L2Flusher l2;
  std::printf("%s (%d SMs); x[M, K] @ W^T, bfloat16 x; int4 in groups of %lld; ms median of %d, L2 flushed\n",
              prop.name, prop.multiProcessorCount, static_cast<long long>(kGroup), kTimed);
  std::printf("%2s %6s %6s | %8s %7s | %8s %6s | %8s %6s %6s | %8s %6s %6s\n", "M", "K", "N", "bf16 ms", "frac",
              "copy GB/s", "", "int8 ms", "frac", "vs bf16", "int4 ms", "frac", "vs bf16");
  bool failed = false;
  void *src = nullptr, *dst = nullptr;
  const size_t most = size_t{2} * 8192 * 32768;
  CHECK_CUDA(cudaMalloc(&src, most));
  CHECK_CUDA(cudaMalloc(&dst, most));
  for (int64_t m : {1, 4}) {
    for (const Shape& s : kShapes) {
      const int64_t K = s.K, N = s.N, G = K / kGroup;
      const double bf16_bytes = 2.0 * K * N + 2.0 * m * (K + N);
      const double int8_bytes = 1.0 * K * N + 2.0 * N + 2.0 * m * (K + N);
      const double int4_bytes = 0.5 * K * N + 4.0 * N * G + 2.0 * m * (K + N);
      const auto copy_bytes = static_cast<size_t>(K * N);  // half the bf16 weight: read + write = its bytes
      const double copy_ms =
          median_ms(l2, [&] { CHECK_CUDA(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, nullptr)); });
      const double copy_gbs = 2.0 * static_cast<double>(copy_bytes) / (copy_ms * 1e6);

      AtenTensorHandle x = cuda_tensor({m, K}, {K, 1}, DType::BFloat16);
      AtenTensorHandle w_t = cuda_tensor({K, N}, {1, K}, DType::BFloat16);  // W [N, K] seen as W^T
      AtenTensorHandle out = cuda_tensor({m, N}, {N, 1}, DType::BFloat16);
      AtenTensorHandle w8 = cuda_tensor({N, K}, {K, 1}, DType::Int8);
      AtenTensorHandle s8 = cuda_tensor({N}, {1}, DType::BFloat16);
      AtenTensorHandle w4 = cuda_tensor({N, K / 2}, {K / 2, 1}, DType::UInt8);
      AtenTensorHandle sz = cuda_tensor({N, G, 2}, {2 * G, 2, 1}, DType::BFloat16);
      fill(x, static_cast<size_t>(m * K) * 2, 1, true);
      fill(w_t, static_cast<size_t>(K * N) * 2, 2, true);
      fill(w8, static_cast<size_t>(K * N), 3, false);
      fill(s8, static_cast<size_t>(N) * 2, 4, true, 0.001f, 0.01f);
      fill(w4, static_cast<size_t>(K * N / 2), 5, false);
      fill(sz, static_cast<size_t>(N * G * 2) * 2, 6, true, -0.01f, 0.01f);

      const double bf16_ms = median_ms(l2, [&] { CHECK_SHIM(mm(out, x, w_t)); });
      failed |= !finite_bf16(out, static_cast<size_t>(m * N));
      AtenTensorHandle r = nullptr;
      const double int8_ms = median_ms(l2, [&] {
        CHECK_SHIM(int8(x, w8, s8, &r));
        aoti_torch_delete_tensor_object(r);
      });
      CHECK_SHIM(int8(x, w8, s8, &r));
      failed |= !finite_bf16(r, static_cast<size_t>(m * N));
      aoti_torch_delete_tensor_object(r);
      const double int4_ms = median_ms(l2, [&] {
        CHECK_SHIM(int4(x, w4, sz, kGroup, &r));
        aoti_torch_delete_tensor_object(r);
      });
      CHECK_SHIM(int4(x, w4, sz, kGroup, &r));
      failed |= !finite_bf16(r, static_cast<size_t>(m * N));
      aoti_torch_delete_tensor_object(r);
      for (AtenTensorHandle h : {x, w_t, out, w8, s8, w4, sz}) aoti_torch_delete_tensor_object(h);

      const auto frac = [&](double bytes, double ms) { return bytes / (ms * 1e6) / copy_gbs; };
      std::printf("%2lld %6lld %6lld | %8.4f %7.2f | %8.0f %6s | %8.4f %6.2f %5.2fx | %8.4f %6.2f %5.2fx\n",
                  static_cast<long long>(m), static_cast<long long>(K), static_cast<long long>(N), bf16_ms,
                  frac(bf16_bytes, bf16_ms), copy_gbs, "", int8_ms, frac(int8_bytes, int8_ms), bf16_ms / int8_ms,
                  int4_ms, frac(int4_bytes, int4_ms), bf16_ms / int4_ms);
    }
  }
  CHECK_CUDA(cudaFree(src));
  CHECK_CUDA(cudaFree(dst));
  if (failed) std::printf("a product gave a non-finite value\n");
  return failed ? 1 : 0;
}
