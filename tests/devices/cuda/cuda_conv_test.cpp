// aoti_torch_cuda_convolution against a direct double-precision host
// convolution: plain, strided/dilated/grouped, depthwise, 1-d, transposed
// (with output_padding and groups), channels-last layouts, half types.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "cuda_test_util.h"
#include "shims/cuda/cuda_shims.h"
#include "kiln/cuda.h"

namespace {

using namespace kiln_test;
using kiln::DType;

struct ConvSpec {
  int64_t N, C, H, W;       // input (H = 1 for 1-d)
  int64_t O, KH, KW;        // output channels, kernel
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t groups;
  bool transposed = false;
  int64_t oph = 0, opw = 0;  // output padding (transposed)
};

int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool tr, int64_t op) {
  return tr ? (in - 1) * s - 2 * p + d * (k - 1) + op + 1 : (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

// x [N, C, H, W]; w [O, C/g, KH, KW] or, transposed, [C, O/g, KH, KW]; y [N, O, OH, OW].
std::vector<float> ref_conv(const ConvSpec& s, const std::vector<float>& x, const std::vector<float>& w,
                            const std::vector<float>& b) {
  const int64_t OH = out_dim(s.H, s.KH, s.sh, s.ph, s.dh, s.transposed, s.oph);
  const int64_t OW = out_dim(s.W, s.KW, s.sw, s.pw, s.dw, s.transposed, s.opw);
  std::vector<double> y(static_cast<size_t>(s.N * s.O * OH * OW), 0.0);
  const int64_t cg = s.C / s.groups, og = s.O / s.groups;
  auto X = [&](int64_t n, int64_t c, int64_t h, int64_t ww) { return double(x[((n * s.C + c) * s.H + h) * s.W + ww]); };
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t g = 0; g < s.groups; ++g)
      for (int64_t oc = 0; oc < og; ++oc)
        for (int64_t ic = 0; ic < cg; ++ic)
          for (int64_t kh = 0; kh < s.KH; ++kh)
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              if (!s.transposed) {
                const double wv = w[(((g * og + oc) * cg + ic) * s.KH + kh) * s.KW + kw];
                for (int64_t oh = 0; oh < OH; ++oh)
                  for (int64_t ow = 0; ow < OW; ++ow) {
                    const int64_t ih = oh * s.sh - s.ph + kh * s.dh, iw = ow * s.sw - s.pw + kw * s.dw;
                    if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                    y[((n * s.O + g * og + oc) * OH + oh) * OW + ow] += wv * X(n, g * cg + ic, ih, iw);
                  }
              } else {
                const double wv = w[(((g * cg + ic) * og + oc) * s.KH + kh) * s.KW + kw];
                for (int64_t ih = 0; ih < s.H; ++ih)
                  for (int64_t iw = 0; iw < s.W; ++iw) {
                    const int64_t oh = ih * s.sh - s.ph + kh * s.dh, ow = iw * s.sw - s.pw + kw * s.dw;
                    if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                    y[((n * s.O + g * og + oc) * OH + oh) * OW + ow] += wv * X(n, g * cg + ic, ih, iw);
                  }
              }
            }
  std::vector<float> out(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const int64_t oc = static_cast<int64_t>(i / static_cast<size_t>(OH * OW)) % s.O;
    out[i] = static_cast<float>(y[i] + (b.empty() ? 0.0 : b[oc]));
  }
  return out;
}

std::vector<float> rounded(std::vector<float> v, DType dt) {
  for (auto& x : v) x = round_to(x, dt);
  return v;
}

// Runs one case; `one_d` drops H (which must be 1) from every tensor and
// parameter; `channels_last` lays the input out NHWC.
void run_conv(const ConvSpec& s, DType dt, bool with_bias, bool one_d, bool channels_last, const char* name) {
  auto conv = shim<decltype(&aoti_torch_cuda_convolution)>("aoti_torch_cuda_convolution");
  const int64_t wc = s.transposed ? s.C : s.O, wi = s.transposed ? s.O / s.groups : s.C / s.groups;
  const auto x = rounded(random_values(static_cast<size_t>(s.N * s.C * s.H * s.W), 51), dt);
  const auto w = rounded(random_values(static_cast<size_t>(wc * wi * s.KH * s.KW), 52), dt);
  const auto b = with_bias ? rounded(random_values(static_cast<size_t>(s.O), 53), dt) : std::vector<float>{};
  const auto want = ref_conv(s, x, w, b);
  std::vector<int64_t> xs = {s.N, s.C, s.H, s.W}, ws = {wc, wi, s.KH, s.KW};
  std::vector<int64_t> xstr;
  if (channels_last) xstr = {s.H * s.W * s.C, 1, s.W * s.C, s.C};
  std::vector<int64_t> stride = {s.sh, s.sw}, pad = {s.ph, s.pw}, dil = {s.dh, s.dw}, opad = {s.oph, s.opw};
  if (one_d) {
    xs = {s.N, s.C, s.W};
    ws = {wc, wi, s.KW};
    stride = {s.sw};
    pad = {s.pw};
    dil = {s.dw};
    opad = {s.opw};
  }
  Handle hx(device_tensor(x, xs, dt, xstr)), hw(device_tensor(w, ws, dt));
  Handle hb(with_bias ? device_tensor(b, {s.O}, dt) : nullptr);
  AtenTensorHandle bias_handle = hb.h;
  const auto n = static_cast<int64_t>(stride.size());
  // Twice: the second call takes the cached cuDNN algorithm.
  for (int pass = 0; pass < 2; ++pass) {
  AtenTensorHandle y = nullptr;
  ASSERT_EQ(conv(hx, hw, with_bias ? &bias_handle : nullptr, stride.data(), n, pad.data(), n, dil.data(), n,
                 s.transposed ? 1 : 0, opad.data(), n, s.groups, &y),
            0)
      << name << ": " << kiln::last_error_message();
  Handle hy(y);
  const int64_t OH = out_dim(s.H, s.KH, s.sh, s.ph, s.dh, s.transposed, s.oph);
  const int64_t OW = out_dim(s.W, s.KW, s.sw, s.pw, s.dw, s.transposed, s.opw);
  std::vector<int64_t> want_sizes = {s.N, s.O, OH, OW};
  if (one_d) want_sizes = {s.N, s.O, OW};
  EXPECT_EQ(sizes_of(hy), want_sizes) << name;
  if (channels_last) {
    EXPECT_EQ(strides_of(hy), (std::vector<int64_t>{OH * OW * s.O, 1, OW * s.O, s.O})) << name << ": channels-last result";
  } else if (!one_d) {
    EXPECT_EQ(strides_of(hy), (std::vector<int64_t>{s.O * OH * OW, OH * OW, OW, 1})) << name << ": contiguous result";
  }
  expect_close(host_values(hy), want, tolerance(dt), std::string(name) + (pass ? " (cached algorithm)" : ""));
  }
}

class CudaConv : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ASSERT_EQ(kiln::cuda::set_allow_tf32(false), kiln::Error::Ok); }
};

TEST_P(CudaConv, Plain2dWithBias) {
  run_conv({2, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1}, GetParam(), true, false, false, "3x3 pad 1");
}

TEST_P(CudaConv, StridedDilatedGrouped) {
  run_conv({2, 4, 11, 10, 6, 3, 2, 2, 1, 2, 0, 2, 1, 2}, GetParam(), true, false, false, "stride 2 dil 2 groups 2");
}

TEST_P(CudaConv, Depthwise) {
  run_conv({2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8}, GetParam(), true, false, false, "depthwise");
  run_conv({1, 4, 6, 6, 8, 3, 3, 2, 2, 1, 1, 1, 1, 4}, GetParam(), false, false, false, "depthwise multiplier 2");
}

TEST_P(CudaConv, OneDimensional) {
  run_conv({2, 4, 1, 17, 6, 1, 5, 1, 2, 0, 2, 1, 1, 2}, GetParam(), true, true, false, "conv1d groups 2");
}

TEST_P(CudaConv, Transposed) {
  ConvSpec s{2, 4, 5, 6, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, true, 1, 1};
  run_conv(s, GetParam(), true, false, false, "transposed stride 2 output_padding 1");
  ConvSpec g{1, 4, 4, 5, 6, 3, 2, 2, 1, 0, 1, 1, 1, 2, true, 1, 0};
  run_conv(g, GetParam(), false, false, false, "transposed groups 2");
  ConvSpec d{2, 4, 1, 9, 4, 1, 4, 1, 3, 0, 1, 1, 2, 1, true, 0, 2};
  run_conv(d, GetParam(), true, true, false, "conv_transpose1d dilation 2");
}

TEST_P(CudaConv, ChannelsLastInputGivesChannelsLastOutput) {
  run_conv({2, 6, 8, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1}, GetParam(), true, false, true, "channels-last");
  run_conv({2, 6, 8, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6}, GetParam(), true, false, true, "channels-last depthwise");
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaConv, ::testing::Values(DType::Float32, DType::Float16, DType::BFloat16),
                         [](const auto& info) { return std::string(kiln::dtype_name(info.param)); });

TEST(CudaConvErrors, WeightMismatchIsAnError) {
  auto conv = shim<decltype(&aoti_torch_cuda_convolution)>("aoti_torch_cuda_convolution");
  Handle x(device_tensor(random_values(2 * 3 * 5 * 5, 1), {2, 3, 5, 5}, DType::Float32));
  Handle w(device_tensor(random_values(4 * 2 * 3 * 3, 2), {4, 2, 3, 3}, DType::Float32));
  const int64_t one[] = {1, 1}, zero[] = {0, 0};
  AtenTensorHandle y = nullptr;
  EXPECT_EQ(conv(x, w, nullptr, one, 2, zero, 2, one, 2, 0, zero, 2, 1, &y), 1);
  EXPECT_NE(kiln::last_error_message().find("does not match"), std::string::npos) << kiln::last_error_message();
  EXPECT_EQ(y, nullptr);
}

// A convolution recorded into a CUDA graph on a thread that has never run it
// has no cuDNN plan there, and plans are not built inside a recording (building
// tries engines until one runs; a failed try must not land in the graph): the
// call takes the legacy API. The replay must match the reference. (The thread
// first runs another convolution eagerly, so its cuDNN handle exists before
// the recording.)
TEST(CudaConvCapture, FirstCallOfAThreadInsideARecordingReplaysCorrectly) {
  auto conv = shim<decltype(&aoti_torch_cuda_convolution)>("aoti_torch_cuda_convolution");
  ASSERT_EQ(kiln::cuda::set_allow_tf32(false), kiln::Error::Ok);
  const ConvSpec s{1, 5, 9, 8, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  const auto x = random_values(static_cast<size_t>(s.N * s.C * s.H * s.W), 71);
  const auto w = random_values(static_cast<size_t>(s.O * s.C * s.KH * s.KW), 72);
  const auto want = ref_conv(s, x, w, {});
  const int64_t one[] = {1, 1}, pad[] = {1, 1}, zero[] = {0, 0};
  std::thread worker([&] {
    auto stream = kiln::cuda::create_stream(0);
    ASSERT_TRUE(stream.ok()) << kiln::last_error_message();
    {
      kiln::cuda::StreamGuard guard(0, *stream);
      ASSERT_EQ(guard.status(), kiln::Error::Ok) << kiln::last_error_message();
      Handle hx(device_tensor(x, {s.N, s.C, s.H, s.W}, DType::Float32));
      Handle hw(device_tensor(w, {s.O, s.C, s.KH, s.KW}, DType::Float32));
      {  // another configuration, eagerly: creates this thread's cuDNN handle
        Handle hw1(device_tensor(random_values(3 * 5, 73), {3, 5, 1, 1}, DType::Float32));
        AtenTensorHandle y1 = nullptr;
        ASSERT_EQ(conv(hx, hw1, nullptr, one, 2, zero, 2, one, 2, 0, zero, 2, 1, &y1), 0) << kiln::last_error_message();
        Handle h1(y1);
        ASSERT_EQ(cudaStreamSynchronize(static_cast<cudaStream_t>(*stream)), cudaSuccess);
      }
      auto cs = static_cast<cudaStream_t>(*stream);
      ASSERT_EQ(cudaStreamBeginCapture(cs, cudaStreamCaptureModeRelaxed), cudaSuccess);
      AtenTensorHandle y = nullptr;
      const int rc = conv(hx, hw, nullptr, one, 2, pad, 2, one, 2, 0, zero, 2, 1, &y);
      const std::string message = rc == 0 ? "" : kiln::last_error_message();
      cudaGraph_t graph = nullptr;
      const cudaError_t ended = cudaStreamEndCapture(cs, &graph);
      ASSERT_EQ(rc, 0) << message;
      ASSERT_EQ(ended, cudaSuccess) << cudaGetErrorString(ended) << ": the recording was invalidated";
      Handle hy(y);
      cudaGraphExec_t exec = nullptr;
      ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(exec, cs), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(cs), cudaSuccess);
      expect_close(host_values(hy), want, tolerance(DType::Float32), "replayed convolution");
      EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
      EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
    }
    EXPECT_EQ(kiln::cuda::destroy_stream(0, *stream), kiln::Error::Ok);
  });
  worker.join();
}

}  // namespace
