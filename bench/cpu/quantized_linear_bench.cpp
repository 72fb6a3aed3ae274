// Kiln's weight-only quantized products on the CPU at a given thread count:
// aoti_torch_cpu__weight_int8pack_mm and aoti_torch_cpu_int4_linear (group
// 128), float32 activations, run inside an OpenMP thread scope as a model call
// runs them (the ops split their work over the calling model's team, which a
// shim called directly from Python does not have). Prints one line:
//   <int8pack median ms> <int4 median ms>
// Used by bench/cpu/quantized_linear.py; by hand:
//   build/kiln-quantized-linear-bench M K N THREADS [CALLS]
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "devices/cpu/openmp_threads.h"
#include "kiln/error.h"
#include "shims/cpu/cpu_shims.h"

namespace {

constexpr int32_t kUInt8 = 0, kInt8 = 1, kF32 = 6;

struct Handle {
  AtenTensorHandle h = nullptr;
  ~Handle() { aoti_torch_delete_tensor_object(h); }
};

void fill(Handle& t, const std::vector<int64_t>& sizes, int32_t dtype, uint64_t seed) {
  std::vector<int64_t> strides(sizes.size());
  int64_t n = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = n;
    n *= sizes[i];
  }
  if (aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), dtype, 0, 0,
                               &t.h) != 0) {
    std::fprintf(stderr, "empty_strided: %s\n", kiln::last_error_message().c_str());
    std::exit(1);
  }
  void* p = nullptr;
  aoti_torch_get_data_ptr(t.h, &p);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t r = static_cast<uint32_t>(s >> 40);
    if (dtype == kF32)
      static_cast<float*>(p)[i] = static_cast<float>(r & 0xFFFF) / 32768.0f - 1.0f;
    else
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(r);
  }
}

template <typename Fn>
double median_ms(Fn fn, int calls) {
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> times;
  for (int i = 0; i < calls; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s M K N THREADS [CALLS]\n", argv[0]);
    return 2;
  }
  const int64_t m = std::atoll(argv[1]), k = std::atoll(argv[2]), n = std::atoll(argv[3]);
  const int threads = std::atoi(argv[4]);
  const int calls = argc > 5 ? std::atoi(argv[5]) : 20;
  const auto omp = kiln::cpu::OpenmpThreads::resolve_handle(::dlopen("libgomp.so.1", RTLD_NOW | RTLD_LOCAL));
  if (!omp.can_fork()) {
    std::fprintf(stderr, "libgomp.so.1 could not be opened\n");
    return 1;
  }
  const kiln::cpu::OpenmpThreads::Scope scope(omp, threads);
  Handle x, w8, scales, q4, sz;
  fill(x, {m, k}, kF32, 1);
  fill(w8, {n, k}, kInt8, 2);
  fill(scales, {n}, kF32, 3);
  fill(q4, {n, k / 2}, kUInt8, 4);
  fill(sz, {n, k / 128, 2}, kF32, 5);
  auto run = [](AOTITorchError rc, AtenTensorHandle out) {
    if (rc != 0) {
      std::fprintf(stderr, "%s\n", kiln::last_error_message().c_str());
      std::exit(1);
    }
    aoti_torch_delete_tensor_object(out);
  };
  const double t8 = median_ms(
      [&] {
        AtenTensorHandle out = nullptr;
        run(aoti_torch_cpu__weight_int8pack_mm(x.h, w8.h, scales.h, &out), out);
      },
      calls);
  const double t4 = median_ms(
      [&] {
        AtenTensorHandle out = nullptr;
        run(aoti_torch_cpu_int4_linear(x.h, q4.h, sz.h, 128, &out), out);
      },
      calls);
  std::printf("%.4f %.4f\n", t8, t4);
  return 0;
}
