// cuBLASLt, cuDNN, cuFFT and cuSOLVER must be opened only when a model first
// needs them. A global environment records the process's mappings right after
// the CUDA device is up (before any test runs an op); the test then checks
// that a GEMM, a convolution, an FFT and a QR factorization load exactly
// their library.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cuda_test_util.h"
#include "shims/cuda/cuda_shims.h"
#include "kiln/cuda.h"
#include "kiln/tensor.h"

namespace {

bool mapped(const std::string& needle) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream all;
  all << maps.rdbuf();
  return all.str().find(needle) != std::string::npos;
}

bool g_cublaslt_at_start = true;
bool g_cudnn_at_start = true;
bool g_cufft_at_start = true;
bool g_cusolver_at_start = true;

class MappingsAtStart : public ::testing::Environment {
 public:
  void SetUp() override {
    // Bring the CUDA device up (plugin, context, one allocation) without any op.
    ASSERT_TRUE(kiln::cuda::is_available()) << kiln::last_error_message();
    const int64_t sizes[] = {4};
    auto t = kiln::Tensor::empty(sizes, kiln::DType::Float32, kiln::Device{kiln::DeviceType::CUDA, 0});
    ASSERT_TRUE(t.ok()) << kiln::last_error_message();
    g_cublaslt_at_start = mapped("libcublasLt");
    g_cudnn_at_start = mapped("libcudnn");
    g_cufft_at_start = mapped("libcufft");
    g_cusolver_at_start = mapped("libcusolver");
  }
};

const auto* const g_env = ::testing::AddGlobalTestEnvironment(new MappingsAtStart);

TEST(CudaLazyLibraries, LoadedOnlyOnFirstUse) {
  using namespace kiln_test;
  EXPECT_FALSE(g_cublaslt_at_start) << "libcublasLt was mapped before any matrix product";
  EXPECT_FALSE(g_cudnn_at_start) << "libcudnn was mapped before any convolution";
  EXPECT_FALSE(g_cufft_at_start) << "libcufft was mapped before any FFT";
  EXPECT_FALSE(g_cusolver_at_start) << "libcusolver was mapped before any factorization";

  auto mm = shim<decltype(&aoti_torch_cuda_mm_out)>("aoti_torch_cuda_mm_out");
  Handle a(device_tensor(random_values(6, 1), {2, 3}, kiln::DType::Float32));
  Handle b(device_tensor(random_values(12, 2), {3, 4}, kiln::DType::Float32));
  Handle out(device_empty({2, 4}, kiln::DType::Float32));
  ASSERT_EQ(mm(out, a, b), 0) << kiln::last_error_message();
  EXPECT_TRUE(mapped("libcublasLt")) << "a matrix product ran without cuBLASLt mapped?";
  if (!g_cudnn_at_start) {
    EXPECT_FALSE(mapped("libcudnn")) << "a matrix product loaded cuDNN";
  }

  auto conv = shim<decltype(&aoti_torch_cuda_convolution)>("aoti_torch_cuda_convolution");
  Handle x(device_tensor(random_values(16, 3), {1, 1, 4, 4}, kiln::DType::Float32));
  Handle w(device_tensor(random_values(9, 4), {1, 1, 3, 3}, kiln::DType::Float32));
  const int64_t one[] = {1, 1}, zero[] = {0, 0};
  AtenTensorHandle y = nullptr;
  ASSERT_EQ(conv(x, w, nullptr, one, 2, zero, 2, one, 2, 0, zero, 2, 1, &y), 0) << kiln::last_error_message();
  Handle y_owner(y);
  EXPECT_TRUE(mapped("libcudnn"));
  if (!g_cufft_at_start) {
    EXPECT_FALSE(mapped("libcufft")) << "a matrix product or a convolution loaded cuFFT";
  }

  auto rfft = shim<decltype(&aoti_torch_cuda__fft_r2c)>("aoti_torch_cuda__fft_r2c");
  Handle signal(device_tensor(random_values(8, 5), {8}, kiln::DType::Float32));
  const int64_t dim[] = {0};
  AtenTensorHandle spectrum = nullptr;
  ASSERT_EQ(rfft(signal, dim, 1, 0, 1, &spectrum), 0) << kiln::last_error_message();
  Handle spectrum_owner(spectrum);
  EXPECT_TRUE(mapped("libcufft"));
  if (!g_cusolver_at_start) {
    EXPECT_FALSE(mapped("libcusolver")) << "a matrix product, a convolution or an FFT loaded cuSOLVER";
  }

  auto geqrf = shim<decltype(&aoti_torch_cuda_geqrf)>("aoti_torch_cuda_geqrf");
  Handle m(device_tensor(random_values(12, 6), {4, 3}, kiln::DType::Float32));
  AtenTensorHandle qr = nullptr, tau = nullptr;
  ASSERT_EQ(geqrf(m, &qr, &tau), 0) << kiln::last_error_message();
  Handle qr_owner(qr), tau_owner(tau);
  EXPECT_TRUE(mapped("libcusolver"));
}

}  // namespace
