// The CUDA device itself: registration, the caching allocator's statistics and
// reuse, and copies (host<->device, device<->device, strided kernel).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "cuda_test_util.h"
#include "kiln/cuda.h"
#include "core/device_table.h"
#include "kiln/tensor.h"

namespace {

using kiln::Device;
using kiln::DeviceType;
using kiln::DType;
using kiln::Tensor;

const Device kGpu{DeviceType::CUDA, 0};

TEST(CudaDevice, RegisteredWithAtLeastOneGpu) {
  ASSERT_TRUE(kiln::cuda::is_available()) << kiln::last_error_message();
  EXPECT_GE(kiln::cuda::device_count(), 1);
  kiln::DeviceInterface* iface = kiln::device_for(DeviceType::CUDA);  // published by the load above
  ASSERT_NE(iface, nullptr);
  EXPECT_EQ(iface->type(), DeviceType::CUDA);
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(iface->device_count(), count);
}

TEST(CudaDevice, MemoryStatsOfBadDeviceIsAnError) {
  auto s = kiln::cuda::memory_stats(1000);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(kiln::last_error_message().find("out of range"), std::string::npos) << kiln::last_error_message();
}

TEST(CudaAllocator, StatsTrackAllocationsAndFreedMemoryIsCached) {
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto before = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(before.ok()) << kiln::last_error_message();
  constexpr int64_t kFloats = 1 << 20;  // 4 MiB
  const int64_t sizes[] = {kFloats};
  {
    auto t = Tensor::empty(sizes, DType::Float32, kGpu);
    ASSERT_TRUE(t.ok()) << kiln::last_error_message();
    auto during = kiln::cuda::memory_stats(0);
    ASSERT_TRUE(during.ok());
    EXPECT_EQ(during->bytes_in_use, before->bytes_in_use + 4 * kFloats);
    EXPECT_EQ(during->allocations_in_use, before->allocations_in_use + 1);
    EXPECT_GE(during->peak_bytes_in_use, during->bytes_in_use);
    EXPECT_GE(during->bytes_reserved, during->bytes_in_use);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto after = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->bytes_in_use, before->bytes_in_use);
  EXPECT_EQ(after->allocations_in_use, before->allocations_in_use);
  // Freed memory stays in the pool (release threshold UINT64_MAX) ...
  EXPECT_GE(after->bytes_reserved, static_cast<uint64_t>(4 * kFloats));
  const uint64_t reserved = after->bytes_reserved;
  // ... and a same-sized allocation is served from it without growing the pool.
  for (int i = 0; i < 5; ++i) {
    auto t = Tensor::empty(sizes, DType::Float32, kGpu);
    ASSERT_TRUE(t.ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  auto again = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->bytes_reserved, reserved);
  EXPECT_GE(again->peak_bytes_in_use, before->bytes_in_use + 4 * kFloats);
  ASSERT_EQ(kiln::cuda::reset_peak_memory_stats(0), kiln::Error::Ok);
  auto reset = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(reset.ok());
  EXPECT_EQ(reset->peak_bytes_in_use, reset->bytes_in_use);
  ASSERT_EQ(kiln::cuda::release_cached_memory(0), kiln::Error::Ok);
  auto released = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(released.ok());
  EXPECT_LT(released->bytes_reserved, reserved);
}

TEST(CudaAllocator, AllocationsAreAligned) {
  for (int64_t n : {1, 3, 17, 1000}) {
    const int64_t sizes[] = {n};
    auto t = Tensor::empty(sizes, DType::UInt8, kGpu);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data_ptr()) % 64, 0u);
  }
}

TEST(CudaCopy, HostDeviceRoundTripAndDeviceToDevice) {
  std::vector<float> host(1000);
  std::iota(host.begin(), host.end(), 0.5f);
  const int64_t sizes[] = {10, 100};
  auto h = Tensor::from_blob(host.data(), sizes, kiln::contiguous_strides(sizes), DType::Float32);
  ASSERT_TRUE(h.ok());
  auto d1 = Tensor::empty(sizes, DType::Float32, kGpu);
  auto d2 = Tensor::empty(sizes, DType::Float32, kGpu);
  ASSERT_TRUE(d1.ok() && d2.ok());
  ASSERT_EQ(kiln::copy_tensor(*d1, *h), kiln::Error::Ok) << kiln::last_error_message();
  ASSERT_EQ(kiln::copy_tensor(*d2, *d1), kiln::Error::Ok) << kiln::last_error_message();
  std::vector<float> back(1000, -1.0f);
  auto hb = Tensor::from_blob(back.data(), sizes, kiln::contiguous_strides(sizes), DType::Float32);
  ASSERT_TRUE(hb.ok());
  // Device-to-host copies are complete when copy_tensor returns.
  ASSERT_EQ(kiln::copy_tensor(*hb, *d2), kiln::Error::Ok) << kiln::last_error_message();
  EXPECT_EQ(back, host);
  // Independent check of the device bytes with the test's own cudaMemcpy.
  std::vector<float> raw(1000);
  ASSERT_EQ(cudaMemcpy(raw.data(), d1->data_ptr(), 4000, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(raw, host);
}

// Reference strided copy on the host.
template <typename T>
std::vector<T> host_strided(const std::vector<T>& src, const std::vector<int64_t>& sizes,
                            const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides,
                            size_t dst_len) {
  std::vector<T> dst(dst_len, T{});
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  for (int64_t lin = 0; lin < n; ++lin) {
    int64_t rest = lin, so = 0, doff = 0;
    for (size_t d = sizes.size(); d-- > 0;) {
      const int64_t i = rest % sizes[d];
      rest /= sizes[d];
      so += i * src_strides[d];
      doff += i * dst_strides[d];
    }
    dst[static_cast<size_t>(doff)] = src[static_cast<size_t>(so)];
  }
  return dst;
}

template <typename T>
void check_strided_copy(const std::vector<int64_t>& sizes, const std::vector<int64_t>& src_strides,
                        const std::vector<int64_t>& dst_strides, size_t src_len, size_t dst_len,
                        size_t byte_offset = 0) {
  std::vector<T> src(src_len);
  for (size_t i = 0; i < src_len; ++i) {
    std::memset(&src[i], 0, sizeof(T));
    const uint64_t v = i * 2654435761u + 7;
    std::memcpy(&src[i], &v, std::min(sizeof(T), sizeof(v)));
  }
  void* dsrc = nullptr;
  void* ddst = nullptr;
  ASSERT_EQ(cudaMalloc(&dsrc, src_len * sizeof(T) + 16), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ddst, dst_len * sizeof(T) + 16), cudaSuccess);
  char* s = static_cast<char*>(dsrc) + byte_offset;
  char* d = static_cast<char*>(ddst) + byte_offset;
  ASSERT_EQ(cudaMemcpy(s, src.data(), src_len * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(d, 0, dst_len * sizeof(T)), cudaSuccess);
  ASSERT_EQ(kiln::cuda::copy_strided(d, dst_strides.data(), s, src_strides.data(), sizes.data(),
                                     static_cast<int64_t>(sizes.size()), sizeof(T), 0, nullptr),
            kiln::Error::Ok)
      << kiln::last_error_message();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<T> got(dst_len);
  ASSERT_EQ(cudaMemcpy(got.data(), d, dst_len * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  const auto want = host_strided(src, sizes, src_strides, dst_strides, dst_len);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), dst_len * sizeof(T)), 0)
      << "element size " << sizeof(T) << ", rank " << sizes.size() << ", offset " << byte_offset;
  cudaFree(dsrc);
  cudaFree(ddst);
}

struct B16 {
  uint64_t a, b;
};

TEST(CudaCopy, StridedKernelEveryElementSize) {
  // Transpose of a [3, 4, 5] tensor into contiguous memory.
  const std::vector<int64_t> sizes = {3, 4, 5}, src_strides = {1, 3, 12}, dst_strides = {20, 5, 1};
  check_strided_copy<uint8_t>(sizes, src_strides, dst_strides, 60, 60);
  check_strided_copy<uint16_t>(sizes, src_strides, dst_strides, 60, 60);
  check_strided_copy<uint32_t>(sizes, src_strides, dst_strides, 60, 60);
  check_strided_copy<uint64_t>(sizes, src_strides, dst_strides, 60, 60);
  check_strided_copy<B16>(sizes, src_strides, dst_strides, 60, 60);
}

TEST(CudaCopy, StridedKernelBroadcastRank8AndMisaligned) {
  // Broadcast: source stride 0 along two dimensions.
  check_strided_copy<float>({4, 3, 2}, {0, 2, 1}, {6, 2, 1}, 6, 24);
  check_strided_copy<float>({2, 3}, {0, 0}, {3, 1}, 1, 6);
  // Rank 8 with a gap in the destination (dst stride larger than dense).
  check_strided_copy<uint16_t>({2, 2, 2, 2, 2, 2, 2, 3}, {384, 192, 96, 48, 24, 12, 6, 2},
                               {256, 128, 64, 32, 16, 8, 4, 1}, 768, 512);
  // Misaligned pointers fall back to a byte copy instead of faulting.
  check_strided_copy<uint32_t>({3, 4}, {1, 3}, {4, 1}, 12, 12, 2);
  check_strided_copy<uint64_t>({5}, {2}, {1}, 10, 5, 4);
}

TEST(CudaCopy, StridedKernelRejectsBadArguments) {
  int64_t sizes[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, strides[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 64), cudaSuccess);
  EXPECT_EQ(kiln::cuda::copy_strided(p, strides, p, strides, sizes, 9, 4, 0, nullptr), kiln::Error::NotSupported);
  EXPECT_EQ(kiln::cuda::copy_strided(p, strides, p, strides, sizes, 2, 3, 0, nullptr), kiln::Error::InvalidArgument);
  cudaFree(p);
}

}  // namespace
