// mm / addmm / bmm against a double-precision host reference, including
// transposed and otherwise strided operands and outputs.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"
#include "devices/cuda/cuda_shim_abi.h"
#include "kiln/cuda.h"

namespace {

using namespace kiln_test;
using kiln::DType;

// Reference C[b] = alpha * A[b] @ B[b] + beta * bias (bias broadcast from [N] or [M, N]).
std::vector<float> ref_matmul(const std::vector<float>& a, const std::vector<float>& b, int64_t batch, int64_t M,
                              int64_t K, int64_t N, double alpha = 1, double beta = 0,
                              const std::vector<float>& bias = {}, bool bias_rows = false) {
  std::vector<float> c(static_cast<size_t>(batch * M * N));
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += double(a[p * M * K + i * K + k]) * b[p * K * N + k * N + j];
        double add = 0;
        if (!bias.empty()) add = bias_rows ? bias[i * N + j] : bias[j];
        c[p * M * N + i * N + j] = static_cast<float>(alpha * s + beta * add);
      }
  return c;
}

std::vector<float> rounded(std::vector<float> v, DType dt) {
  for (auto& x : v) x = round_to(x, dt);
  return v;
}

class CudaGemm : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ASSERT_EQ(kiln::cuda::set_allow_tf32(false), kiln::Error::Ok); }
};

TEST_P(CudaGemm, MmPlainTransposedAndStridedOperands) {
  const DType dt = GetParam();
  auto mm = shim<decltype(&aoti_torch_cuda_mm_out)>("aoti_torch_cuda_mm_out");
  const int64_t M = 37, K = 64, N = 45;
  const auto a = rounded(random_values(M * K, 11), dt), b = rounded(random_values(K * N, 12), dt);
  const auto want = ref_matmul(a, b, 1, M, K, N);
  struct Case {
    const char* name;
    std::vector<int64_t> a_strides, b_strides, out_strides;
  };
  const Case cases[] = {
      {"contiguous", {}, {}, {}},
      {"A transposed view", {1, M}, {}, {}},
      {"B transposed view", {}, {1, K}, {}},
      {"both transposed, column-major out", {1, M}, {1, K}, {1, M}},
      {"padded leading dims", {K + 3, 1}, {N + 5, 1}, {N + 7, 1}},
      {"no unit stride anywhere (copied)", {2 * K, 2}, {2, 2 * K}, {2 * N, 2}},
  };
  for (const Case& c : cases) {
    Handle ha(device_tensor(a, {M, K}, dt, c.a_strides));
    Handle hb(device_tensor(b, {K, N}, dt, c.b_strides));
    Handle out(device_empty({M, N}, dt, c.out_strides));
    ASSERT_EQ(mm(out, ha, hb), 0) << c.name << ": " << kiln::last_error_message();
    expect_close(host_values(out), want, tolerance(dt), c.name);
  }
}

TEST_P(CudaGemm, AddmmBroadcastsBiasWithBetaAlpha) {
  const DType dt = GetParam();
  auto addmm = shim<decltype(&aoti_torch_cuda_addmm_out)>("aoti_torch_cuda_addmm_out");
  const int64_t M = 16, K = 24, N = 40;
  const auto a = rounded(random_values(M * K, 21), dt), b = rounded(random_values(K * N, 22), dt);
  const auto bias = rounded(random_values(N, 23), dt), bias2d = rounded(random_values(M * N, 24), dt);
  {
    Handle ha(device_tensor(a, {M, K}, dt)), hb(device_tensor(b, {K, N}, dt)), hbias(device_tensor(bias, {N}, dt));
    Handle out(device_empty({M, N}, dt));
    ASSERT_EQ(addmm(out, hbias, ha, hb, 1.0, 1.0), 0) << kiln::last_error_message();
    expect_close(host_values(out), ref_matmul(a, b, 1, M, K, N, 1.0, 1.0, bias), tolerance(dt), "linear (bias [N])");
  }
  {
    // nn.Linear's layout: weight [N, K] used transposed.
    Handle ha(device_tensor(a, {M, K}, dt)), hb(device_tensor(b, {K, N}, dt, {1, K}));
    Handle hbias(device_tensor(bias2d, {M, N}, dt));
    Handle out(device_empty({M, N}, dt));
    ASSERT_EQ(addmm(out, hbias, ha, hb, 0.5, 2.0), 0) << kiln::last_error_message();
    expect_close(host_values(out), ref_matmul(a, b, 1, M, K, N, 2.0, 0.5, bias2d, true), tolerance(dt),
                 "beta 0.5 alpha 2, bias [M, N]");
  }
  {
    // beta == 0 ignores self entirely, even NaN.
    std::vector<float> nan_bias(N, std::numeric_limits<float>::quiet_NaN());
    Handle ha(device_tensor(a, {M, K}, dt)), hb(device_tensor(b, {K, N}, dt)), hbias(device_tensor(nan_bias, {N}, dt));
    Handle out(device_empty({M, N}, dt));
    ASSERT_EQ(addmm(out, hbias, ha, hb, 0.0, 1.0), 0) << kiln::last_error_message();
    expect_close(host_values(out), ref_matmul(a, b, 1, M, K, N), tolerance(dt), "beta 0");
  }
}

TEST_P(CudaGemm, BmmWithStridedBatches) {
  const DType dt = GetParam();
  auto bmm = shim<decltype(&aoti_torch_cuda_bmm_out)>("aoti_torch_cuda_bmm_out");
  const int64_t Bt = 5, M = 12, K = 33, N = 20;
  const auto a = rounded(random_values(Bt * M * K, 31), dt), b = rounded(random_values(Bt * K * N, 32), dt);
  const auto want = ref_matmul(a, b, Bt, M, K, N);
  {
    Handle ha(device_tensor(a, {Bt, M, K}, dt)), hb(device_tensor(b, {Bt, K, N}, dt));
    Handle out(device_empty({Bt, M, N}, dt));
    ASSERT_EQ(bmm(out, ha, hb), 0) << kiln::last_error_message();
    expect_close(host_values(out), want, tolerance(dt), "bmm contiguous");
  }
  {
    // A as [M, B, K] memory permuted (attention-style), B transposed per batch.
    Handle ha(device_tensor(a, {Bt, M, K}, dt, {K, Bt * K, 1})), hb(device_tensor(b, {Bt, K, N}, dt, {K * N, 1, K}));
    Handle out(device_empty({Bt, M, N}, dt, {N, Bt * N, 1}));
    ASSERT_EQ(bmm(out, ha, hb), 0) << kiln::last_error_message();
    expect_close(host_values(out), want, tolerance(dt), "bmm permuted batches");
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaGemm, ::testing::Values(DType::Float32, DType::Float16, DType::BFloat16),
                         [](const auto& info) { return std::string(kiln::dtype_name(info.param)); });

TEST(CudaGemmErrors, ShapeMismatchIsAnErrorWithMessage) {
  auto mm = shim<decltype(&aoti_torch_cuda_mm_out)>("aoti_torch_cuda_mm_out");
  Handle a(device_tensor(random_values(6, 1), {2, 3}, DType::Float32));
  Handle b(device_tensor(random_values(8, 2), {4, 2}, DType::Float32));
  Handle out(device_empty({2, 2}, DType::Float32));
  EXPECT_EQ(mm(out, a, b), 1);
  EXPECT_NE(kiln::last_error_message().find("aoti_torch_cuda_mm_out"), std::string::npos);
  EXPECT_NE(kiln::last_error_message().find("shape mismatch"), std::string::npos) << kiln::last_error_message();
}

TEST(CudaGemmSettings, Tf32SwitchIsVisible) {
  ASSERT_EQ(kiln::cuda::set_allow_tf32(true), kiln::Error::Ok);
  auto on = kiln::cuda::allow_tf32();
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(*on);
  // TF32 results stay within TF32 accuracy (~1e-3 relative).
  auto mm = shim<decltype(&aoti_torch_cuda_mm_out)>("aoti_torch_cuda_mm_out");
  const int64_t M = 64, K = 256, N = 64;
  const auto a = random_values(M * K, 41), b = random_values(K * N, 42);
  Handle ha(device_tensor(a, {M, K}, DType::Float32)), hb(device_tensor(b, {K, N}, DType::Float32));
  Handle out(device_empty({M, N}, DType::Float32));
  ASSERT_EQ(mm(out, ha, hb), 0) << kiln::last_error_message();
  expect_close(host_values(out), ref_matmul(a, b, 1, M, K, N), 5e-3, "tf32 mm");
  ASSERT_EQ(kiln::cuda::set_allow_tf32(false), kiln::Error::Ok);
  auto off = kiln::cuda::allow_tf32();
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(*off);
}

}  // namespace
