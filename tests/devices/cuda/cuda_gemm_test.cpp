// mm / addmm / bmm against a double-precision host reference, including
// transposed and otherwise strided operands and outputs; the GEMV kernel's
// cases (few rows against a transposed weight), each asserting from the debug
// log which path the product took; cuBLASLt's cached algorithms under
// concurrent callers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "cuda_test_util.h"
#include "shims/cuda/cuda_shims.h"
#include "devices/cuda/kernels/gemv_kernel.h"
#include "kiln/cuda.h"
#include "kiln/log.h"

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

// ---- GEMV kernel (gemv_kernel.h) ----

// Which path a product took, from the debug line matmul_into logs for it.
enum class Path { Gemv, CublasLt, Unknown };

const char* path_name(Path p) { return p == Path::Gemv ? "GEMV" : p == Path::CublasLt ? "cuBLASLt" : "unknown"; }

// Runs `call` (a shim call returning its status) with debug logging captured
// and returns the log; fails the test when the call fails.
template <typename F>
std::string debug_log_of(F&& call, const std::string& what) {
  const kiln::LogLevel old = kiln::log_level();
  kiln::set_log_level(kiln::LogLevel::Debug);
  testing::internal::CaptureStderr();
  const int rc = call();
  const std::string log = testing::internal::GetCapturedStderr();
  kiln::set_log_level(old);
  EXPECT_EQ(rc, 0) << what << ": " << kiln::last_error_message();
  return log;
}

// The path a product took, from its debug log line.
template <typename F>
Path path_of(F&& call, const std::string& what) {
  const std::string log = debug_log_of(call, what);
  const bool gemv = log.find(": GEMV kernel") != std::string::npos;
  const bool lt = log.find(": cuBLASLt") != std::string::npos;
  if (gemv == lt) return Path::Unknown;
  return gemv ? Path::Gemv : Path::CublasLt;
}

// addmm with nn.Linear's bias past the GEMV's rows: cuBLASLt adds a
// contiguous bias in its epilogue when out is row-major and beta is 1; any
// other addend (scaled, strided, column-major out) is copied into out first.
// Both against the reference, and the log says which way each went.
TEST_P(CudaGemm, AddmmBiasInTheEpilogueOrCopied) {
  const DType dt = GetParam();
  auto addmm = shim<decltype(&aoti_torch_cuda_addmm_out)>("aoti_torch_cuda_addmm_out");
  const int64_t M = 16, K = 64, N = 40;
  const auto a = rounded(random_values(M * K, 61), dt), b = rounded(random_values(K * N, 62), dt);
  const auto bias = rounded(random_values(N, 63), dt);
  Handle ha(device_tensor(a, {M, K}, dt)), hb(device_tensor(b, {K, N}, dt, {1, K}));
  Handle hbias(device_tensor(bias, {N}, dt)), hbias_row(device_tensor(bias, {1, N}, dt));
  Handle hbias_gapped(device_tensor(bias, {N}, dt, {2}));  // every other element; the gaps hold NaN
  struct Case {
    const char* name;
    AtenTensorHandle self;
    double beta, alpha;
    std::vector<int64_t> out_strides;
    const char* expect_log;
  };
  const Case cases[] = {
      {"bias [N]", hbias.h, 1.0, 1.0, {}, "bias in the epilogue"},
      {"bias [N], alpha 2", hbias.h, 1.0, 2.0, {}, "bias in the epilogue"},
      {"bias [1, N]", hbias_row.h, 1.0, 1.0, {}, "bias in the epilogue"},
      {"bias [N], beta 0.5", hbias.h, 0.5, 1.0, {}, "bias copied into out"},
      {"strided bias", hbias_gapped.h, 1.0, 1.0, {}, "bias copied into out"},
      {"column-major out", hbias.h, 1.0, 1.0, {1, M}, "bias copied into out"},
  };
  for (const Case& c : cases) {
    const std::string name = std::string(kiln::dtype_name(dt)) + " " + c.name;
    Handle out(device_empty({M, N}, dt, c.out_strides));
    const std::string log = debug_log_of([&] { return addmm(out, c.self, ha, hb, c.beta, c.alpha); }, name);
    EXPECT_NE(log.find(c.expect_log), std::string::npos) << name << ": " << log;
    expect_close(host_values(out), ref_matmul(a, b, 1, M, K, N, c.alpha, c.beta, bias), tolerance(dt), name);
  }
}

// b = W^T for a row-major weight W [N, K]: as logical [K, N] values (for the
// reference) and as the strided view nn.Linear hands to mm (strides {1, ldw}).
struct Weight {
  std::vector<float> w;   // [N, K] row-major
  std::vector<float> bt;  // [K, N] row-major, bt[k*N + n] = w[n*K + k]
};

Weight make_weight(int64_t N, int64_t K, DType dt, uint32_t seed) {
  Weight r;
  r.w = rounded(random_values(static_cast<size_t>(N * K), seed), dt);
  r.bt.resize(r.w.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) r.bt[k * N + n] = r.w[n * K + k];
  return r;
}

class CudaGemv : public CudaGemm {};

TEST_P(CudaGemv, MmAgainstTransposedWeightsMatchesReference) {
  const DType dt = GetParam();
  auto mm = shim<decltype(&aoti_torch_cuda_mm_out)>("aoti_torch_cuda_mm_out");
  uint32_t seed = 100;
  for (int64_t N : {1, 7, 256, 2049}) {
    for (int64_t K : {8, 64, 2048, 8200}) {
      const Weight wt = make_weight(N, K, dt, ++seed);
      Handle hb(device_tensor(wt.bt, {K, N}, dt, {1, K}));
      for (int64_t M = 1; M <= 5; ++M) {
        const std::string name = std::string(kiln::dtype_name(dt)) + " M=" + std::to_string(M) +
                                 " N=" + std::to_string(N) + " K=" + std::to_string(K);
        const auto a = rounded(random_values(static_cast<size_t>(M * K), ++seed), dt);
        Handle ha(device_tensor(a, {M, K}, dt));
        Handle out(device_empty({M, N}, dt));  // poisoned with NaN
        const Path path = path_of([&] { return mm(out, ha, hb); }, name);
        // K = 8 float16/bfloat16 is exactly one 16-byte vector; every K here
        // is a multiple of 16 bytes, so only M decides.
        EXPECT_EQ(path_name(path), path_name(M <= kiln::cudadev::kGemvMaxRows ? Path::Gemv : Path::CublasLt))
            << name;
        expect_close(host_values(out), ref_matmul(a, wt.bt, 1, M, K, N), tolerance(dt), name);
      }
    }
  }
}

TEST_P(CudaGemv, AddmmAlphaBetaAndStridedOutputs) {
  const DType dt = GetParam();
  auto addmm = shim<decltype(&aoti_torch_cuda_addmm_out)>("aoti_torch_cuda_addmm_out");
  auto mm = shim<decltype(&aoti_torch_cuda_mm_out)>("aoti_torch_cuda_mm_out");
  const int64_t N = 256, K = 2048;
  const Weight wt = make_weight(N, K, dt, 200);
  Handle hb(device_tensor(wt.bt, {K, N}, dt, {1, K}));
  for (int64_t M : {1, 3}) {
    const std::string tag = std::string(kiln::dtype_name(dt)) + " M=" + std::to_string(M) + ": ";
    const auto a = rounded(random_values(static_cast<size_t>(M * K), 201 + M), dt);
    const auto bias = rounded(random_values(N, 203 + M), dt), bias2d = rounded(random_values(M * N, 205 + M), dt);
    Handle ha(device_tensor(a, {M, K}, dt));
    {
      Handle hbias(device_tensor(bias, {N}, dt)), out(device_empty({M, N}, dt));
      EXPECT_EQ(path_name(path_of([&] { return addmm(out, hbias, ha, hb, 1.0, 1.0); }, tag + "linear")), path_name(Path::Gemv));
      expect_close(host_values(out), ref_matmul(a, wt.bt, 1, M, K, N, 1.0, 1.0, bias), tolerance(dt),
                   tag + "bias [N]");
    }
    {
      // Column-major output with a padded leading dimension.
      Handle hbias(device_tensor(bias2d, {M, N}, dt)), out(device_empty({M, N}, dt, {1, M + 1}));
      EXPECT_EQ(path_name(path_of([&] { return addmm(out, hbias, ha, hb, 0.5, 2.0); }, tag + "beta 0.5")), path_name(Path::Gemv));
      expect_close(host_values(out), ref_matmul(a, wt.bt, 1, M, K, N, 2.0, 0.5, bias2d, true), tolerance(dt),
                   tag + "beta 0.5 alpha 2, strided out");
    }
    {
      // out is also self: the kernel reads the addend where it writes.
      Handle out(device_tensor(bias2d, {M, N}, dt));
      EXPECT_EQ(path_name(path_of([&] { return addmm(out, out, ha, hb, 1.0, -1.5); }, tag + "in place")), path_name(Path::Gemv));
      expect_close(host_values(out), ref_matmul(a, wt.bt, 1, M, K, N, -1.5, 1.0, bias2d, true), tolerance(dt),
                   tag + "self is out");
    }
    {
      // beta == 0: neither self (NaN) nor the poisoned out may leak.
      std::vector<float> nan_bias(N, std::numeric_limits<float>::quiet_NaN());
      Handle hbias(device_tensor(nan_bias, {N}, dt)), out(device_empty({M, N}, dt));
      EXPECT_EQ(path_name(path_of([&] { return addmm(out, hbias, ha, hb, 0.0, 0.75); }, tag + "beta 0")), path_name(Path::Gemv));
      expect_close(host_values(out), ref_matmul(a, wt.bt, 1, M, K, N, 0.75), tolerance(dt), tag + "beta 0, NaN self");
    }
    {
      // Neither dimension of out has unit stride; the gaps stay poisoned.
      Handle out(device_empty({M, N}, dt, {2 * N + 3, 2}));
      EXPECT_EQ(path_name(path_of([&] { return mm(out, ha, hb); }, tag + "gapped out")), path_name(Path::Gemv));
      expect_close(host_values(out), ref_matmul(a, wt.bt, 1, M, K, N), tolerance(dt), tag + "gapped out");
    }
  }
}

TEST_P(CudaGemv, UnsuitableInputsFallBackToCublasLtAndStayCorrect) {
  const DType dt = GetParam();
  auto mm = shim<decltype(&aoti_torch_cuda_mm_out)>("aoti_torch_cuda_mm_out");
  const int64_t N = 7;
  auto check = [&](const std::string& what, int64_t M, int64_t K, Path expected, auto make_a, auto make_b) {
    const std::string name = std::string(kiln::dtype_name(dt)) + " " + what;
    const auto a = rounded(random_values(static_cast<size_t>(M * K), 300 + static_cast<uint32_t>(K)), dt);
    const Weight wt = make_weight(N, K, dt, 400 + static_cast<uint32_t>(K));
    Handle ha(make_a(a, M, K)), hb(make_b(wt.bt, K));
    Handle out(device_empty({M, N}, dt));
    EXPECT_EQ(path_name(path_of([&] { return mm(out, ha, hb); }, name)), path_name(expected)) << name;
    expect_close(host_values(out), ref_matmul(a, wt.bt, 1, M, K, N), tolerance(dt), name);
  };
  auto plain_a = [&](const std::vector<float>& a, int64_t M, int64_t K) { return device_tensor(a, {M, K}, dt); };
  auto linear_b = [&](const std::vector<float>& bt, int64_t K) { return device_tensor(bt, {K, N}, dt, {1, K}); };
  const bool fp32 = dt == DType::Float32;

  // K = 66 is no multiple of 16 bytes in any dtype; K = 12 is (48 bytes) in
  // float32 only.
  check("K=66", 1, 66, Path::CublasLt, plain_a, linear_b);
  check("K=12", 2, 12, fp32 ? Path::Gemv : Path::CublasLt, plain_a, linear_b);
  // a starts one element past a 16-byte boundary.
  check("misaligned a", 1, 64, Path::CublasLt,
        [&](const std::vector<float>& a, int64_t M, int64_t K) {
          std::vector<float> padded(1, 0.0f);
          padded.insert(padded.end(), a.begin(), a.end());
          Handle base(device_tensor(padded, {static_cast<int64_t>(padded.size())}, dt));
          AtenTensorHandle view = nullptr;
          const int64_t sizes[] = {M, K}, strides[] = {K, 1};
          EXPECT_EQ(aoti_torch__reinterpret_tensor(base, 2, sizes, strides, 1, &view), 0) << kiln::last_error_message();
          return view;  // shares base's storage, which outlives this handle
        },
        linear_b);
  // Weight rows K + 1 elements apart.
  check("weight ld K+1", 1, 64, Path::CublasLt, plain_a,
        [&](const std::vector<float>& bt, int64_t K) { return device_tensor(bt, {K, N}, dt, {1, K + 1}); });
  // A row-major [K, N] right operand is no transposed weight.
  check("row-major b", 1, 64, Path::CublasLt, plain_a,
        [&](const std::vector<float>& bt, int64_t K) { return device_tensor(bt, {K, N}, dt); });
  // a transposed: K is not its unit-stride dimension.
  check("transposed a", 2, 64, Path::CublasLt,
        [&](const std::vector<float>& a, int64_t M, int64_t K) { return device_tensor(a, {M, K}, dt, {1, M}); },
        linear_b);
  // a rows 16 bytes apart but not contiguous: still fine for the kernel.
  check("padded a rows", 3, 64, Path::Gemv,
        [&](const std::vector<float>& a, int64_t M, int64_t K) { return device_tensor(a, {M, K}, dt, {K + 16, 1}); },
        linear_b);
}

TEST_P(CudaGemv, BmmAgainstTransposedBatchesMatchesReference) {
  const DType dt = GetParam();
  auto bmm = shim<decltype(&aoti_torch_cuda_bmm_out)>("aoti_torch_cuda_bmm_out");
  const int64_t Bt = 3, K = 64, N = 33;
  for (int64_t M : {1, 2}) {
    const std::string tag = std::string(kiln::dtype_name(dt)) + " M=" + std::to_string(M) + ": ";
    const auto a = rounded(random_values(static_cast<size_t>(Bt * M * K), 500 + M), dt);
    // Per batch b[p] = W[p]^T, as q @ k^T in attention: b[p][k][n] at p*N*K + n*K + k.
    std::vector<float> b(static_cast<size_t>(Bt * K * N));
    const auto w = rounded(random_values(b.size(), 510 + M), dt);
    for (int64_t p = 0; p < Bt; ++p)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) b[p * K * N + k * N + n] = w[p * N * K + n * K + k];
    const auto want = ref_matmul(a, b, Bt, M, K, N);
    Handle ha(device_tensor(a, {Bt, M, K}, dt));
    {
      Handle hb(device_tensor(b, {Bt, K, N}, dt, {N * K, 1, K}));
      Handle out(device_empty({Bt, M, N}, dt, {N, Bt * N, 1}));  // [M, B, N] memory
      EXPECT_EQ(path_name(path_of([&] { return bmm(out, ha, hb); }, tag + "bmm")), path_name(Path::Gemv));
      expect_close(host_values(out), want, tolerance(dt), tag + "bmm, permuted out");
    }
    {
      // Batches N*K + 1 elements apart: not 16-byte aligned, cuBLASLt's.
      Handle hb(device_tensor(b, {Bt, K, N}, dt, {N * K + 1, 1, K}));
      Handle out(device_empty({Bt, M, N}, dt));
      EXPECT_EQ(path_name(path_of([&] { return bmm(out, ha, hb); }, tag + "odd batch stride")),
                path_name(Path::CublasLt));
      expect_close(host_values(out), want, tolerance(dt), tag + "bmm, odd batch stride");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaGemv, ::testing::Values(DType::Float32, DType::Float16, DType::BFloat16),
                         [](const auto& info) { return std::string(kiln::dtype_name(info.param)); });

// Kiln's fused op (norm_linear_ops.cpp): the GEMV with its RMSNorm prologue
// against a reference that rounds the normalised rows to the dtype first, as
// the unfused graph does; 1-4 rows, 3-d x, Gemma's unit offset and none, a
// bfloat16 norm weight, and more rows than the kernel takes (refused).
TEST_P(CudaGemv, RmsNormLinearMatchesReference) {
  const DType dt = GetParam();
  auto fused = shim<decltype(&aoti_torch_cuda_rms_norm_linear)>("aoti_torch_cuda_rms_norm_linear");
  uint32_t seed = 900;
  for (int64_t K : {64, 2048}) {
    for (int64_t N : {7, 2560}) {
      const Weight wt = make_weight(N, K, dt, ++seed);
      Handle hw(device_tensor(wt.w, {N, K}, dt));
      const auto g = rounded(random_values(static_cast<size_t>(K), ++seed), DType::BFloat16);
      Handle hg(device_tensor(g, {K}, DType::BFloat16));
      for (int64_t rows = 1; rows <= 4; ++rows) {
        for (const double offset : {0.0, 1.0}) {
          std::string name = kiln::dtype_name(dt);
          name += " rows=" + std::to_string(rows);
          name += " K=" + std::to_string(K);
          name += " N=" + std::to_string(N);
          const auto x = rounded(random_values(static_cast<size_t>(rows * K), ++seed), dt);
          std::vector<float> normed(x.size());
          for (int64_t r = 0; r < rows; ++r) {
            double ss = 0;
            for (int64_t k = 0; k < K; ++k) ss += double(x[r * K + k]) * x[r * K + k];
            const double inv = 1.0 / std::sqrt(ss / K + 1e-6);
            for (int64_t k = 0; k < K; ++k)
              normed[r * K + k] = round_to(static_cast<float>(x[r * K + k] * inv * (g[k] + offset)), dt);
          }
          Handle hx(device_tensor(x, {1, rows, K}, dt));
          AtenTensorHandle out = nullptr;
          ASSERT_EQ(fused(hx, hg, hw, 1e-6, offset, &out), 0) << name << ": " << kiln::last_error_message();
          Handle ho(out);
          EXPECT_EQ(sizes_of(ho), (std::vector<int64_t>{1, rows, N})) << name;
          expect_close(host_values(ho), ref_matmul(normed, wt.bt, 1, rows, K, N), tolerance(dt), name);
        }
      }
    }
  }
  Handle hx5(device_tensor(random_values(5 * 64, 1), {5, 64}, dt));
  Handle hw5(device_tensor(random_values(3 * 64, 2), {3, 64}, dt));
  Handle hg5(device_tensor(random_values(64, 3), {64}, dt));
  AtenTensorHandle out = nullptr;
  EXPECT_NE(fused(hx5, hg5, hw5, 1e-6, 0.0, &out), 0);
  EXPECT_NE(kiln::last_error_message().find("more than 4 rows"), std::string::npos) << kiln::last_error_message();
}

// The kernel launched directly with every block shape the planner can pick
// (8, 4, 2 or 1 columns per block), forced through the SM count it is given.
TEST(CudaGemvKernel, EveryBlockShapeMatchesReference) {
  using kiln::cudadev::GemvParams;
  const DType dt = DType::BFloat16;
  const int64_t M = 2, N = 37, K = 8192;
  const Weight wt = make_weight(N, K, dt, 600);
  const auto a = rounded(random_values(static_cast<size_t>(M * K), 601), dt);
  const auto want = ref_matmul(a, wt.bt, 1, M, K, N, 1.5);
  Handle ha(device_tensor(a, {M, K}, dt)), hw(device_tensor(wt.w, {N, K}, dt));
  void *pa = nullptr, *pw = nullptr;
  aoti_torch_get_data_ptr(ha, &pa);
  aoti_torch_get_data_ptr(hw, &pw);
  // sm_count -> columns per block for N = 37 and 1024 vectors per row.
  const std::pair<int, int> plans[] = {{1, 8}, {2, 4}, {3, 2}, {1000, 1}};
  for (const auto& [sms, cols] : plans) {
    Handle out(device_empty({M, N}, dt));
    void* po = nullptr;
    aoti_torch_get_data_ptr(out, &po);
    GemvParams p;
    p.a = pa;
    p.w = pw;
    p.out = po;
    p.dtype = dt;
    p.M = M;
    p.N = N;
    p.K = K;
    p.lda = K;
    p.ldw = K;
    p.out_rs = N;
    p.out_cs = 1;
    p.alpha = 1.5f;
    ASSERT_EQ(kiln::cudadev::gemv_unsupported(p), nullptr);
    EXPECT_EQ(kiln::cudadev::gemv_columns_per_block(p, sms), cols) << "sm_count " << sms;
    ASSERT_EQ(kiln::cudadev::launch_gemv(p, sms, nullptr), kiln::Error::Ok) << kiln::last_error_message();
    expect_close(host_values(out), want, tolerance(dt), "columns per block " + std::to_string(cols));
  }
}

TEST(CudaGemvKernel, ApplicabilityRules) {
  using kiln::cudadev::gemv_applies;
  using kiln::cudadev::GemvParams;
  alignas(16) static char storage[64];
  GemvParams ok;
  ok.a = storage;
  ok.w = storage;
  ok.out = storage;
  ok.dtype = DType::BFloat16;
  ok.M = 4;
  ok.N = 3;
  ok.K = 16;
  ok.lda = 24;  // 48 bytes
  ok.ldw = 16;
  EXPECT_TRUE(gemv_applies(ok)) << kiln::cudadev::gemv_unsupported(ok);
  auto with = [&](auto change) {
    GemvParams p = ok;
    change(p);
    return gemv_applies(p);
  };
  EXPECT_FALSE(with([](GemvParams& p) { p.M = 5; }));
  EXPECT_FALSE(with([](GemvParams& p) { p.dtype = DType::Float64; }));
  EXPECT_FALSE(with([](GemvParams& p) { p.K = 12; }));  // 24 bytes
  EXPECT_TRUE(with([](GemvParams& p) { p.dtype = DType::Float32; p.K = 12; p.lda = 12; p.ldw = 12; }));
  EXPECT_FALSE(with([](GemvParams& p) { p.a = storage + 2; }));
  EXPECT_FALSE(with([](GemvParams& p) { p.w = storage + 8; }));
  EXPECT_TRUE(with([](GemvParams& p) { p.out = storage + 2; }));  // out: any element address
  EXPECT_FALSE(with([](GemvParams& p) { p.lda = 20; }));
  EXPECT_TRUE(with([](GemvParams& p) { p.lda = 20; p.M = 1; }));  // one row: its stride is unused
  EXPECT_FALSE(with([](GemvParams& p) { p.ldw = 17; }));
  EXPECT_TRUE(with([](GemvParams& p) { p.ldw = 17; p.N = 1; }));
  EXPECT_FALSE(with([](GemvParams& p) { p.a_ks = 2; }));
  EXPECT_FALSE(with([](GemvParams& p) { p.w_ks = 3; }));
  EXPECT_FALSE(with([](GemvParams& p) { p.batch = 2; p.a_bs = 4; p.w_bs = 48; }));
  EXPECT_TRUE(with([](GemvParams& p) { p.batch = 2; p.a_bs = 96; p.w_bs = 48; p.out_bs = 5; }));
  EXPECT_FALSE(with([](GemvParams& p) { p.batch = 70000; p.a_bs = 96; p.w_bs = 48; }));
}

// cuBLASLt products from several threads at once, with shapes shared between
// threads and shapes of their own, repeated so most calls hit the algorithm
// cache: every result must match the reference.
TEST(CudaGemmCache, ConcurrentCallersGetCorrectResults) {
  ASSERT_EQ(kiln::cuda::set_allow_tf32(false), kiln::Error::Ok);
  auto mm = shim<decltype(&aoti_torch_cuda_mm_out)>("aoti_torch_cuda_mm_out");
  const DType dt = DType::Float32;
  constexpr int kThreads = 4, kRounds = 10;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Shape 0 is common to all threads, shape 1 is this thread's own.
      const int64_t shapes[2][3] = {{16, 96, 40}, {8 + t, 64 + 8 * t, 24 + t}};
      for (int round = 0; round < kRounds; ++round) {
        for (const auto& s : shapes) {
          const int64_t M = s[0], K = s[1], N = s[2];
          const auto seed = static_cast<uint32_t>(1000 + 100 * t + round);
          const auto a = random_values(static_cast<size_t>(M * K), seed), b = random_values(static_cast<size_t>(K * N), seed + 7);
          Handle ha(device_tensor(a, {M, K}, dt)), hb(device_tensor(b, {K, N}, dt)), out(device_empty({M, N}, dt));
          EXPECT_EQ(mm(out, ha, hb), 0) << kiln::last_error_message();
          expect_close(host_values(out), ref_matmul(a, b, 1, M, K, N), tolerance(dt),
                       "thread " + std::to_string(t) + " round " + std::to_string(round));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace
