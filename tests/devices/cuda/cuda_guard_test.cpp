// Device/stream guards and the thread-local current stream: every shim agrees
// on one per-thread state, guards restore it, threads do not share it.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <thread>

#include "cuda_test_util.h"
#include "shims/cuda/cuda_shims.h"
#include "kiln/cuda.h"

namespace {

using namespace kiln_test;

struct GuardShims {
  decltype(&aoti_torch_create_cuda_guard) create_guard = shim<decltype(create_guard)>("aoti_torch_create_cuda_guard");
  decltype(&aoti_torch_delete_cuda_guard) delete_guard = shim<decltype(delete_guard)>("aoti_torch_delete_cuda_guard");
  decltype(&aoti_torch_cuda_guard_set_index) set_index = shim<decltype(set_index)>("aoti_torch_cuda_guard_set_index");
  decltype(&aoti_torch_create_cuda_stream_guard) create_stream_guard =
      shim<decltype(create_stream_guard)>("aoti_torch_create_cuda_stream_guard");
  decltype(&aoti_torch_delete_cuda_stream_guard) delete_stream_guard =
      shim<decltype(delete_stream_guard)>("aoti_torch_delete_cuda_stream_guard");
  decltype(&aoti_torch_get_current_cuda_stream) current_stream =
      shim<decltype(current_stream)>("aoti_torch_get_current_cuda_stream");
  decltype(&aoti_torch_cuda_caching_allocator_raw_alloc) raw_alloc =
      shim<decltype(raw_alloc)>("aoti_torch_cuda_caching_allocator_raw_alloc");
  decltype(&aoti_torch_cuda_caching_allocator_raw_delete) raw_delete =
      shim<decltype(raw_delete)>("aoti_torch_cuda_caching_allocator_raw_delete");
};

void* current(const GuardShims& g, int32_t index) {
  void* s = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(g.current_stream(index, &s), 0) << kiln::last_error_message();
  return s;
}

TEST(CudaGuards, StreamGuardsNestAndRestore) {
  GuardShims g;
  cudaStream_t s1 = nullptr, s2 = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s1), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&s2), cudaSuccess);
  EXPECT_EQ(current(g, 0), nullptr) << "a thread starts on the legacy default stream";
  CUDAStreamGuardHandle outer = nullptr, inner = nullptr;
  ASSERT_EQ(g.create_stream_guard(s1, 0, &outer), 0) << kiln::last_error_message();
  EXPECT_EQ(current(g, 0), s1);
  EXPECT_EQ(current(g, -1), s1) << "-1 means the current device";
  int dev = -1;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  EXPECT_EQ(dev, 0);
  ASSERT_EQ(g.create_stream_guard(s2, 0, &inner), 0);
  EXPECT_EQ(current(g, 0), s2);
  ASSERT_EQ(g.delete_stream_guard(inner), 0);
  EXPECT_EQ(current(g, 0), s1);
  ASSERT_EQ(g.delete_stream_guard(outer), 0);
  EXPECT_EQ(current(g, 0), nullptr);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

TEST(CudaGuards, StateIsPerThread) {
  GuardShims g;
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  CUDAStreamGuardHandle guard = nullptr;
  ASSERT_EQ(g.create_stream_guard(s, 0, &guard), 0);
  void* seen_by_other = reinterpret_cast<void*>(0x1);
  std::thread t([&] { g.current_stream(0, &seen_by_other); });
  t.join();
  EXPECT_EQ(seen_by_other, nullptr);
  EXPECT_EQ(current(g, 0), s);
  ASSERT_EQ(g.delete_stream_guard(guard), 0);
  cudaStreamDestroy(s);
}

TEST(CudaGuards, DeviceGuardSetsAndRestoresDevice) {
  GuardShims g;
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  CUDAGuardHandle guard = nullptr;
  ASSERT_EQ(g.create_guard(0, &guard), 0) << kiln::last_error_message();
  int dev = -1;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  EXPECT_EQ(dev, 0);
  if (count > 1) {
    ASSERT_EQ(g.set_index(guard, 1), 0);
    ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
    EXPECT_EQ(dev, 1);
  }
  ASSERT_EQ(g.delete_guard(guard), 0);
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  EXPECT_EQ(dev, 0);
  // A bad index is an error with a message, not a crash.
  CUDAGuardHandle bad = nullptr;
  EXPECT_EQ(g.create_guard(count + 5, &bad), 1);
  EXPECT_NE(kiln::last_error_message().find("out of range"), std::string::npos) << kiln::last_error_message();
}

TEST(CudaGuards, StreamOrderedAllocationUnderAStreamGuard) {
  // Inside a stream guard, allocations and frees are ordered on that stream:
  // a kernel-free check is that raw alloc/delete round-trip cleanly while the
  // stream is busy and the stats come back to where they were.
  GuardShims g;
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto before = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(before.ok());
  CUDAStreamGuardHandle guard = nullptr;
  ASSERT_EQ(g.create_stream_guard(s, 0, &guard), 0);
  void* p = nullptr;
  ASSERT_EQ(g.raw_alloc(1 << 16, &p), 0) << kiln::last_error_message();
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(cudaMemsetAsync(p, 0, 1 << 16, s), cudaSuccess);
  auto during = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(during.ok());
  EXPECT_EQ(during->bytes_in_use, before->bytes_in_use + (1 << 16));
  ASSERT_EQ(g.raw_delete(p), 0);
  ASSERT_EQ(g.delete_stream_guard(guard), 0);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  auto after = kiln::cuda::memory_stats(0);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->bytes_in_use, before->bytes_in_use);
  cudaStreamDestroy(s);
}

}  // namespace
