#include "cuda_test_util.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kiln/cuda.h"
#include "kiln/error.h"

namespace kiln_test {

void* global_symbol(const char* name) {
  // Loading the plugin happens at the first CUDA device lookup.
  EXPECT_TRUE(kiln::cuda::is_available()) << kiln::last_error_message();
  // Shims are exported as kiln_torch_<rest> (cmake/KilnShimNames.cmake); the
  // loader renames a model's aoti_torch_ imports the same way.
  std::string exported(name);
  if (exported.rfind("aoti_torch_", 0) == 0) exported.replace(0, 4, "kiln");
  void* p = dlsym(RTLD_DEFAULT, exported.c_str());
  EXPECT_NE(p, nullptr) << exported << " is not in the global symbol scope";
  return p;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | half);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(x >> 16);
}

float bf16_to_float(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

float round_to(float v, kiln::DType dtype) {
  switch (dtype) {
    case kiln::DType::Float16: return half_to_float(float_to_half(v));
    case kiln::DType::BFloat16: return bf16_to_float(float_to_bf16(v));
    default: return v;
  }
}

namespace {

std::vector<int64_t> contiguous(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size());
  int64_t st = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    s[i] = st;
    st *= std::max<int64_t>(sizes[i], 1);
  }
  return s;
}

// Calls f(offset_in_elements, row_major_index) for every element.
template <typename F>
void for_each_element(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, F f) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> idx(sizes.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    int64_t off = 0;
    for (size_t d = 0; d < sizes.size(); ++d) off += idx[d] * strides[d];
    f(off, linear);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t extent(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t last = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 0;
    last += (sizes[d] - 1) * strides[d];
  }
  return last + 1;
}

}  // namespace

AtenTensorHandle device_empty(const std::vector<int64_t>& sizes, kiln::DType dtype,
                              const std::vector<int64_t>& strides_in) {
  const auto strides = strides_in.empty() ? contiguous(sizes) : strides_in;
  AtenTensorHandle h = nullptr;
  EXPECT_EQ(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(),
                                     static_cast<int32_t>(dtype), 1, 0, &h),
            0)
      << kiln::last_error_message();
  void* data = nullptr;
  aoti_torch_get_data_ptr(h, &data);
  const size_t bytes = static_cast<size_t>(extent(sizes, strides)) * kiln::element_size(dtype);
  if (bytes) {
    EXPECT_EQ(cudaMemset(data, 0xff, bytes), cudaSuccess);
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return h;
}

AtenTensorHandle device_tensor(const std::vector<float>& values, const std::vector<int64_t>& sizes,
                               kiln::DType dtype, const std::vector<int64_t>& strides_in) {
  const auto strides = strides_in.empty() ? contiguous(sizes) : strides_in;
  AtenTensorHandle h = device_empty(sizes, dtype, strides);
  const size_t elem = kiln::element_size(dtype);
  const int64_t n = extent(sizes, strides);
  std::vector<uint8_t> host(static_cast<size_t>(n) * elem, 0xff);
  for_each_element(sizes, strides, [&](int64_t off, int64_t i) {
    const float v = values.at(static_cast<size_t>(i));
    uint8_t* dst = host.data() + off * static_cast<int64_t>(elem);
    if (dtype == kiln::DType::Float32) {
      std::memcpy(dst, &v, 4);
    } else if (dtype == kiln::DType::Float16) {
      const uint16_t b = float_to_half(v);
      std::memcpy(dst, &b, 2);
    } else if (dtype == kiln::DType::BFloat16) {
      const uint16_t b = float_to_bf16(v);
      std::memcpy(dst, &b, 2);
    } else if (dtype == kiln::DType::Bool) {
      *dst = v != 0.0f ? 1 : 0;
    } else {
      ADD_FAILURE() << "device_tensor: unsupported dtype";
    }
  });
  void* data = nullptr;
  aoti_torch_get_data_ptr(h, &data);
  if (!host.empty()) {
    EXPECT_EQ(cudaMemcpy(data, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  return h;
}

std::vector<int64_t> sizes_of(AtenTensorHandle t) {
  int64_t dim = 0;
  int64_t* s = nullptr;
  aoti_torch_get_dim(t, &dim);
  aoti_torch_get_sizes(t, &s);
  return std::vector<int64_t>(s, s + dim);
}

std::vector<int64_t> strides_of(AtenTensorHandle t) {
  int64_t dim = 0;
  int64_t* s = nullptr;
  aoti_torch_get_dim(t, &dim);
  aoti_torch_get_strides(t, &s);
  return std::vector<int64_t>(s, s + dim);
}

int expect_lse_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  if (got.size() != want.size()) return 0;
  std::vector<float> got_finite, want_finite;
  int inf_rows = 0;
  for (size_t x = 0; x < want.size(); ++x) {
    if (std::isinf(want[x])) {
      ++inf_rows;
      EXPECT_TRUE(std::isinf(got[x]) && got[x] < 0) << what << ": lse " << x << " = " << got[x];
    } else {
      got_finite.push_back(got[x]);
      want_finite.push_back(want[x]);
    }
  }
  expect_close(got_finite, want_finite, 1e-4, what);
  return inf_rows;
}

void* data_of(AtenTensorHandle h) {
  void* p = nullptr;
  EXPECT_EQ(aoti_torch_get_data_ptr(h, &p), 0);
  return p;
}

void copy_strides(const std::vector<int64_t>& from, int64_t (&to)[4]) {
  for (int d = 0; d < 4; ++d) to[d] = from.at(static_cast<size_t>(d));
}

std::vector<float> host_values(AtenTensorHandle t) {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto sizes = sizes_of(t), strides = strides_of(t);
  int32_t dt = 0;
  aoti_torch_get_dtype(t, &dt);
  const auto dtype = static_cast<kiln::DType>(dt);
  const size_t elem = kiln::element_size(dtype);
  const int64_t n = extent(sizes, strides);
  std::vector<uint8_t> host(static_cast<size_t>(n) * elem);
  void* data = nullptr;
  aoti_torch_get_data_ptr(t, &data);
  if (!host.empty()) {
    EXPECT_EQ(cudaMemcpy(host.data(), data, host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  }
  int64_t count = 1;
  for (int64_t s : sizes) count *= s;
  std::vector<float> out(static_cast<size_t>(count));
  for_each_element(sizes, strides, [&](int64_t off, int64_t i) {
    const uint8_t* src = host.data() + off * static_cast<int64_t>(elem);
    float v = 0;
    if (dtype == kiln::DType::Float32) {
      std::memcpy(&v, src, 4);
    } else if (dtype == kiln::DType::Float16 || dtype == kiln::DType::BFloat16) {
      uint16_t b;
      std::memcpy(&b, src, 2);
      v = dtype == kiln::DType::Float16 ? half_to_float(b) : bf16_to_float(b);
    } else {
      ADD_FAILURE() << "host_values: unsupported dtype";
    }
    out[static_cast<size_t>(i)] = v;
  });
  return out;
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return v;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rtol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double max_ref = 0;
  for (float w : want) max_ref = std::max(max_ref, std::fabs(static_cast<double>(w)));
  const double atol = rtol * std::max(max_ref, 1e-30);
  size_t bad = 0;
  double worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double allowed = atol + rtol * std::fabs(static_cast<double>(want[i]));
    if (!(err <= allowed)) {
      ++bad;
      if (!(err <= worst)) {
        worst = err;
        worst_i = i;
      }
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements off; worst at " << worst_i
                     << ": got " << got[worst_i] << " want " << want[worst_i] << " (rtol " << rtol << ", max|ref| "
                     << max_ref << ")";
}

double tolerance(kiln::DType dtype) { return dtype == kiln::DType::Float32 ? 1e-5 : 2e-2; }

}  // namespace kiln_test
