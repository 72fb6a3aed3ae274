// aoti_torch_cuda_convolution through cuDNN's convolution API (cuDNN 9,
// loaded lazily). 1-d convolutions run as 2-d with a height of 1; groups and
// depthwise through the group count; transposed convolutions as cuDNN's
// backward-data pass; bias by Kiln's own channel-bias kernel.
//
// Layout: the result is channels-last exactly when ATen's CUDA convolution
// (and so the layout AOTInductor compiled the rest of the model against) would
// make it so: input or weight suggests channels-last (c10's stride heuristic),
// 4-d or 5-d weight, dtype not float64. Operands are first copied to that
// layout when they are not already dense in it.
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <climits>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "shims/common/shim_util.h"
#include "devices/cuda/device/cuda_settings.h"
#include "shims/common/convolution_args.h"
#include "shims/cuda/cuda_shims.h"
#include "devices/cuda/device/cuda_thread_state.h"
#include "devices/cuda/libraries/cudnn_api.h"
#include "devices/cuda/kernels/bias_kernel.h"
#include "shims/cuda/cudnn_conv_plan.h"
#include "shims/cuda/tensor_ref.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

// c10's "strides look channels-last" test for 4-d (order C, W, H, N) and 5-d
// (C, W, H, D, N) tensors; ambiguous cases fall back to contiguous.
bool strides_like_channels_last(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  std::vector<int> order;
  if (sizes.size() == 4) {
    order = {1, 3, 2, 0};
  } else if (sizes.size() == 5) {
    order = {1, 4, 3, 2, 0};
  } else {
    return false;
  }
  if (strides[1] == 0) return false;
  int64_t min = 0;
  for (int d : order) {
    if (sizes[d] == 0) return false;
    if (strides[d] < min) return false;
    if (d == 0 && min == strides[1]) return false;
    min = strides[d] * sizes[d];
  }
  return true;
}

// Dimension order (outermost first) of NCHW / NHWC (and the 5-d forms).
std::vector<int> layout_order(size_t rank, bool channels_last) {
  std::vector<int> order;
  if (!channels_last) {
    for (size_t i = 0; i < rank; ++i) order.push_back(static_cast<int>(i));
    return order;
  }
  order.push_back(0);
  for (size_t i = 2; i < rank; ++i) order.push_back(static_cast<int>(i));
  order.push_back(1);
  return order;
}

Result<cudnnDataType_t> cudnn_type(DType d) {
  switch (d) {
    case DType::Float32: return CUDNN_DATA_FLOAT;
    case DType::Float16: return CUDNN_DATA_HALF;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    case DType::Float64: return CUDNN_DATA_DOUBLE;
    default:
      return set_error(Error::NotSupported, std::string("cuDNN convolution of dtype ") + dtype_name(d) +
                                                " (supported: float32, float16, bfloat16, float64)");
  }
}

// Expands a per-dimension parameter given with one value or `n` values.
// cuDNN takes convolution parameters as int.
Result<std::vector<int>> as_ints(const std::vector<int64_t>& values, const char* name) {
  std::vector<int> out;
  for (int64_t v : values) {
    if (v > INT_MAX)
      return set_error(Error::InvalidArgument, std::string("argument '") + name + "' value " + std::to_string(v) +
                                                   " is too large for cuDNN");
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// RAII for the descriptors of one call.
struct ConvResources {
  const CudnnApi* api = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ~ConvResources() {
    if (conv) api->conv_destroy(conv);
    if (w) api->filter_destroy(w);
    if (y) api->tensor_destroy(y);
    if (x) api->tensor_destroy(x);
  }
};

Result<std::vector<int>> to_int(const std::vector<int64_t>& v, const char* what) {
  std::vector<int> out;
  for (int64_t x : v) {
    if (x < 0 || x > INT_MAX)
      return set_error(Error::NotSupported, std::string(what) + " dimension " + std::to_string(x) + " exceeds cuDNN's int range");
    out.push_back(static_cast<int>(x));
  }
  return out;
}

Error set_tensor(const CudnnApi& api, cudnnTensorDescriptor_t desc, cudnnDataType_t type,
                 const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, const char* what) {
  KILN_ASSIGN_OR_RETURN(std::vector<int> dims, to_int(sizes, what));
  KILN_ASSIGN_OR_RETURN(std::vector<int> str, to_int(strides, what));
  return cudnn_status(api, api.tensor_set(desc, type, static_cast<int>(dims.size()), dims.data(), str.data()),
                      "cudnnSetTensorNdDescriptor");
}

constexpr size_t kMaxWorkspace = size_t{4} << 30;

// The algorithm that last ran for one exact configuration. cuDNN's heuristic
// query costs far more than the convolution itself for small layers, and a
// model runs the same configurations every time.
struct AlgoChoice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

class AlgoCache {
 public:
  bool find(const std::string& key, AlgoChoice* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    *out = it->second;
    return true;
  }
  void put(const std::string& key, AlgoChoice choice) {
    std::lock_guard<std::mutex> lock(mutex_);
    map_[key] = choice;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, AlgoChoice> map_;
};

AlgoCache& algo_cache() {
  static AlgoCache* cache = new AlgoCache();  // never destroyed: used until exit
  return *cache;
}

void append(std::string& key, const std::vector<int64_t>& v) {
  for (int64_t x : v) key += std::to_string(x) + ",";
  key += ";";
}

void append(std::string& key, const std::vector<int>& v) {
  for (int x : v) key += std::to_string(x) + ",";
  key += ";";
}

Error convolution(const TensorRef& input, const TensorRef& weight, const TensorRef* bias, const int64_t* stride,
                  int64_t stride_len, const int64_t* padding, int64_t padding_len, const int64_t* dilation,
                  int64_t dilation_len, bool transposed, const int64_t* output_padding, int64_t output_padding_len,
                  int64_t groups, AtenTensorHandle* ret0) {
  if (weight.dtype != input.dtype || (bias && bias->dtype != input.dtype))
    return set_error(Error::InvalidArgument, "input, weight and bias must share a dtype (input " +
                                                 std::string(dtype_name(input.dtype)) + ", weight " +
                                                 dtype_name(weight.dtype) + ")");
  if (weight.device_index != input.device_index || (bias && bias->device_index != input.device_index))
    return set_error(Error::InvalidArgument, "input, weight and bias must be on the same CUDA device");
  std::optional<std::span<const int64_t>> bias_sizes;
  if (bias) bias_sizes = bias->sizes;
  KILN_ASSIGN_OR_RETURN(aoti::ConvolutionArgs args,
                        aoti::convolution_args(input.sizes, weight.sizes, bias_sizes, stride, stride_len, padding,
                                         padding_len, dilation, dilation_len, transposed, output_padding,
                                         output_padding_len, groups));
  KILN_ASSIGN_OR_RETURN(cudnnDataType_t type, cudnn_type(input.dtype));
  const size_t rank = input.sizes.size();
  KILN_ASSIGN_OR_RETURN(std::vector<int> st, as_ints(args.stride, "stride"));
  KILN_ASSIGN_OR_RETURN(std::vector<int> pad, as_ints(args.padding, "padding"));
  KILN_ASSIGN_OR_RETURN(std::vector<int> dil, as_ints(args.dilation, "dilation"));
  KILN_ASSIGN_OR_RETURN(std::vector<int> opad, as_ints(args.output_padding, "output_padding"));
  const int64_t out_ch = args.out_channels;
  const std::vector<int64_t>& out_sizes = args.output_sizes;

  // Work in 4-d/5-d: a 1-d convolution is a 2-d one with height 1. ATen makes
  // the 1-d input contiguous before unsqueezing; the weight keeps its strides.
  std::vector<int64_t> x_sizes = input.sizes, x_strides = input.strides, w_sizes = weight.sizes,
                       w_strides = weight.strides, y_sizes = out_sizes;
  // x_real_strides: the input's actual strides (what density is checked
  // against); x_strides: what the layout decision sees.
  std::vector<int64_t> x_real_strides = input.strides;
  const bool one_d = rank == 3;
  if (one_d) {
    x_strides = contiguous_strides(x_sizes);
    x_sizes.insert(x_sizes.begin() + 2, 1);
    x_strides.insert(x_strides.begin() + 2, x_sizes[3] * x_strides[3]);
    x_real_strides.insert(x_real_strides.begin() + 2, x_sizes[3] * x_real_strides[2]);
    w_sizes.insert(w_sizes.begin() + 2, 1);
    w_strides.insert(w_strides.begin() + 2, w_sizes[3] * w_strides[3]);
    y_sizes.insert(y_sizes.begin() + 2, 1);
    st.insert(st.begin(), 1);
    pad.insert(pad.begin(), 0);
    dil.insert(dil.begin(), 1);
    opad.insert(opad.begin(), 0);
  }
  const size_t wrank = x_sizes.size();
  const bool channels_last = input.dtype != DType::Float64 && (strides_like_channels_last(x_sizes, x_strides) ||
                                                               strides_like_channels_last(w_sizes, w_strides));
  const std::vector<int> order = layout_order(wrank, channels_last);
  const std::vector<int64_t> y_strides = dense_strides_in_order(y_sizes, order);

  // The output handle, in the caller's rank (drop the height of a 1-d conv).
  std::vector<int64_t> out_strides = y_strides;
  if (one_d) out_strides.erase(out_strides.begin() + 2);
  KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor(out_sizes, out_strides, input.dtype,
                                                    static_cast<int32_t>(DeviceType::CUDA), input.device_index));
  KILN_ASSIGN_OR_RETURN(TensorRef y, read_tensor(out.get(), "result"));

  int64_t out_numel = 1;
  for (int64_t s : out_sizes) out_numel *= s;
  const int device = input.device_index;
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  cudaStream_t stream = current_stream(device);

  if (out_numel > 0) {
    if (input.numel() > INT_MAX || weight.numel() > INT_MAX || out_numel > INT_MAX)
      return set_error(Error::NotSupported, "convolution tensors with more than 2^31 elements");
    // Operands dense in the chosen layout (copies when they are not).
    DeviceBuffer x_copy, w_copy;
    const void* x_ptr = input.data;
    const void* w_ptr = weight.data;
    std::vector<int64_t> xs_dense = dense_strides_in_order(x_sizes, order);
    if (!is_dense_in_order(x_sizes, x_real_strides, order)) {
      // Copy through the caller-rank view (x_sizes/x_strides may describe a
      // contiguous reinterpretation that the 1-d input does not have).
      std::vector<int64_t> dst = xs_dense;
      if (one_d) dst.erase(dst.begin() + 2);
      KILN_ASSIGN_OR_RETURN(x_copy, copy_to_layout(input, dst, stream));
      x_ptr = x_copy.get();
    }
    if (!is_dense_in_order(w_sizes, w_strides, order)) {
      std::vector<int64_t> dst = dense_strides_in_order(w_sizes, order);
      if (one_d) dst.erase(dst.begin() + 2);
      KILN_ASSIGN_OR_RETURN(w_copy, copy_to_layout(weight, dst, stream));
      w_ptr = w_copy.get();
    }

    KILN_ASSIGN_OR_RETURN(const CudnnApi* api, cudnn());
    KILN_ASSIGN_OR_RETURN(cudnnHandle_t handle, cudnn_handle(*api, device));
    // float32 without TF32: FMA kernels only. Half types: tensor cores.
    const bool fp32_strict = input.dtype == DType::Float32 && !allow_tf32();
    std::string key = std::to_string(device) + (transposed ? "T" : "F") + std::to_string(static_cast<int>(input.dtype)) +
                      (channels_last ? "L" : "C") + (fp32_strict ? "S" : "X") + std::to_string(groups) + ";";
    append(key, x_sizes);
    append(key, w_sizes);
    append(key, y_sizes);
    append(key, pad);
    append(key, st);
    append(key, dil);

    bool done = false;
    {  // a cached cuDNN execution plan; where cuDNN has none, its legacy API below
      const auto describe = [&] {
        ConvProblem prob;
        prob.transposed = transposed;
        prob.io_type = type;
        prob.compute_type = input.dtype == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
        prob.fp32_strict = fp32_strict;
        prob.x_sizes = x_sizes;
        prob.x_strides = xs_dense;
        prob.w_sizes = w_sizes;
        prob.w_strides = dense_strides_in_order(w_sizes, order);
        prob.y_sizes = y_sizes;
        prob.y_strides = y_strides;
        prob.pad.assign(pad.begin(), pad.end());
        prob.stride.assign(st.begin(), st.end());
        prob.dilation.assign(dil.begin(), dil.end());
        return prob;
      };
      const Error planned = run_planned_convolution(*api, handle, key, std::cref(describe),
                                                    ConvPointers{x_ptr, w_ptr, y.data}, device, stream);
      if (planned == Error::Ok)
        done = true;
      else if (planned != Error::NotSupported)
        return planned;
    }
    if (!done) {  // cuDNN's legacy API
      KILN_RETURN_IF_ERROR(cudnn_status(*api, api->set_stream(handle, stream), "cudnnSetStream"));
      ConvResources r;
      r.api = api;
      KILN_RETURN_IF_ERROR(cudnn_status(*api, api->tensor_create(&r.x), "cudnnCreateTensorDescriptor"));
      KILN_RETURN_IF_ERROR(cudnn_status(*api, api->tensor_create(&r.y), "cudnnCreateTensorDescriptor"));
      KILN_RETURN_IF_ERROR(cudnn_status(*api, api->filter_create(&r.w), "cudnnCreateFilterDescriptor"));
      KILN_RETURN_IF_ERROR(cudnn_status(*api, api->conv_create(&r.conv), "cudnnCreateConvolutionDescriptor"));
      KILN_RETURN_IF_ERROR(set_tensor(*api, r.x, type, x_sizes, xs_dense, "input"));
      KILN_RETURN_IF_ERROR(set_tensor(*api, r.y, type, y_sizes, y_strides, "output"));
      KILN_ASSIGN_OR_RETURN(std::vector<int> wdims, to_int(w_sizes, "weight"));
      KILN_RETURN_IF_ERROR(cudnn_status(*api,
                                        api->filter_set(r.w, type, channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                                        static_cast<int>(wdims.size()), wdims.data()),
                                        "cudnnSetFilterNdDescriptor"));
      const cudnnDataType_t compute = input.dtype == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
      KILN_RETURN_IF_ERROR(cudnn_status(*api,
                                        api->conv_set(r.conv, static_cast<int>(wrank - 2), pad.data(), st.data(),
                                                      dil.data(), CUDNN_CROSS_CORRELATION, compute),
                                        "cudnnSetConvolutionNdDescriptor"));
      KILN_RETURN_IF_ERROR(cudnn_status(*api, api->conv_set_groups(r.conv, static_cast<int>(groups)),
                                        "cudnnSetConvolutionGroupCount"));
      const cudnnMathType_t math = input.dtype == DType::Float32 ? (fp32_strict ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH)
                                   : input.dtype == DType::Float64 ? CUDNN_DEFAULT_MATH
                                                                   : CUDNN_TENSOR_OP_MATH;
      KILN_RETURN_IF_ERROR(cudnn_status(*api, api->conv_set_math(r.conv, math), "cudnnSetConvolutionMathType"));


      const float one_f = 1.0f, zero_f = 0.0f;
      const double one_d64 = 1.0, zero_d64 = 0.0;
      const void* alpha = input.dtype == DType::Float64 ? static_cast<const void*>(&one_d64) : &one_f;
      const void* beta = input.dtype == DType::Float64 ? static_cast<const void*>(&zero_d64) : &zero_f;
      constexpr int kMaxAlgos = 16;
      int returned = 0;
      cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
      // Runs one algorithm; true when cuDNN accepted it.
      auto try_algo = [&](int algo, cudnnMathType_t algo_math, size_t workspace) -> Result<bool> {
        if (workspace > kMaxWorkspace) return false;
        // Strict float32 keeps the descriptor on FMA math whatever the heuristic
        // suggests: the descriptor, not the perf entry, governs execution.
        if (!fp32_strict && api->conv_set_math(r.conv, algo_math) != CUDNN_STATUS_SUCCESS) return false;
        DeviceBuffer ws;
        if (workspace > 0) {
          KILN_ASSIGN_OR_RETURN(ws, DeviceBuffer::allocate(workspace, device, stream));
        }
        if (!transposed) {
          last = api->fwd(handle, alpha, r.x, x_ptr, r.w, w_ptr, r.conv, static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                          ws.get(), workspace, beta, r.y, y.data);
        } else {
          last = api->bwd_data(handle, alpha, r.w, w_ptr, r.x, x_ptr, r.conv,
                               static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws.get(), workspace, beta, r.y, y.data);
        }
        if (last == CUDNN_STATUS_SUCCESS) algo_cache().put(key, AlgoChoice{algo, algo_math, workspace});
        return last == CUDNN_STATUS_SUCCESS;
      };
      AlgoChoice cached;
      if (algo_cache().find(key, &cached)) {
        KILN_ASSIGN_OR_RETURN(done, try_algo(cached.algo, cached.math, cached.workspace));
      }
      if (done) {
        // cached algorithm ran
      } else if (!transposed) {
        std::array<cudnnConvolutionFwdAlgoPerf_t, kMaxAlgos> perf{};
        KILN_RETURN_IF_ERROR(cudnn_status(*api, api->fwd_algos(handle, r.x, r.w, r.conv, r.y, kMaxAlgos, &returned, perf.data()),
                                          "cudnnGetConvolutionForwardAlgorithm_v7"));
        for (int i = 0; i < returned && !done; ++i) {
          const auto& p = perf[static_cast<size_t>(i)];
          if (p.status != CUDNN_STATUS_SUCCESS) continue;
          KILN_ASSIGN_OR_RETURN(done, try_algo(static_cast<int>(p.algo), p.mathType, p.memory));
        }
      } else {
        std::array<cudnnConvolutionBwdDataAlgoPerf_t, kMaxAlgos> perf{};
        // Transposed convolution = gradient of a forward convolution whose
        // input is our output (r.y) and whose output is our input (r.x).
        KILN_RETURN_IF_ERROR(cudnn_status(
            *api, api->bwd_data_algos(handle, r.w, r.x, r.conv, r.y, kMaxAlgos, &returned, perf.data()),
            "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
        for (int i = 0; i < returned && !done; ++i) {
          const auto& p = perf[static_cast<size_t>(i)];
          if (p.status != CUDNN_STATUS_SUCCESS) continue;
          KILN_ASSIGN_OR_RETURN(done, try_algo(static_cast<int>(p.algo), p.mathType, p.memory));
        }
      }
      if (!done)
        return cudnn_status(*api, last == CUDNN_STATUS_SUCCESS ? CUDNN_STATUS_NOT_SUPPORTED : last,
                            (std::string(transposed ? "cuDNN transposed convolution" : "cuDNN convolution") +
                             " (no algorithm ran; input " + input.describe() + ", weight " + weight.describe() + ")")
                                .c_str());
    }
    if (bias != nullptr) {
      DeviceBuffer b_copy;
      const void* b_ptr = bias->data;
      if (bias->strides[0] != 1 && out_ch > 1) {
        const std::vector<int64_t> one = {1};
        KILN_ASSIGN_OR_RETURN(b_copy, copy_to_layout(*bias, one, stream));
        b_ptr = b_copy.get();
      }
      const int64_t channel_stride = y_strides[1];
      KILN_RETURN_IF_ERROR(
          launch_add_channel_bias(y.data, b_ptr, input.dtype, out_numel, out_ch, channel_stride, stream));
    }
  }
  *ret0 = out.release();
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation,
    int64_t dilation_len_, int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_,
    int64_t groups, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_convolution", [&]() -> Error {
    if (ret0 == nullptr) return set_error(Error::InvalidArgument, "output argument 'ret0' is null");
    KILN_ASSIGN_OR_RETURN(TensorRef x, read_tensor(input, "input"));
    KILN_ASSIGN_OR_RETURN(TensorRef w, read_tensor(weight, "weight"));
    TensorRef b;
    const TensorRef* bp = nullptr;
    if (bias != nullptr && *bias != nullptr) {
      KILN_ASSIGN_OR_RETURN(b, read_tensor(*bias, "bias"));
      bp = &b;
    }
    return convolution(x, w, bp, stride, stride_len_, padding, padding_len_, dilation, dilation_len_, transposed != 0,
                       output_padding, output_padding_len_, groups, ret0);
  });
}

}  // extern "C"
