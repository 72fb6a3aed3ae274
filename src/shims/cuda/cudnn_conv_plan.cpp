#include "shims/cuda/cudnn_conv_plan.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <utility>

#include "shims/cuda/tensor_ref.h"

namespace kiln::cudadev {
namespace {

constexpr size_t kMaxWorkspace = size_t{4} << 30;
// Plans kept per thread; past this many the cache starts over (a model has a
// few dozen configurations, a dynamic-shape one a few per shape).
constexpr size_t kMaxPlans = 512;
constexpr int64_t kX = 1, kW = 2, kY = 3;  // unique ids of the tensors

// Owns one backend descriptor.
class Descriptor {
 public:
  Descriptor() = default;
  Descriptor(const CudnnApi* api, cudnnBackendDescriptor_t d) : api_(api), d_(d) {}
  Descriptor(Descriptor&& o) noexcept : api_(o.api_), d_(std::exchange(o.d_, nullptr)) {}
  Descriptor& operator=(Descriptor&& o) noexcept {
    if (this != &o) {
      reset();
      api_ = o.api_;
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() { reset(); }

  cudnnBackendDescriptor_t get() const { return d_; }

  Error set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values,
            const char* what) const {
    return cudnn_status(*api_, api_->backend_set(d_, name, type, count, values), what);
  }
  Error set_desc(cudnnBackendAttributeName_t name, const Descriptor& value, const char* what) const {
    cudnnBackendDescriptor_t v = value.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v, what);
  }
  Error finalize(const char* what) const { return cudnn_status(*api_, api_->backend_finalize(d_), what); }

 private:
  void reset() {
    if (d_ != nullptr) api_->backend_destroy(d_);
    d_ = nullptr;
  }
  const CudnnApi* api_ = nullptr;
  cudnnBackendDescriptor_t d_ = nullptr;
};

Result<Descriptor> make(const CudnnApi& api, cudnnBackendDescriptorType_t type, const char* what) {
  cudnnBackendDescriptor_t d = nullptr;
  KILN_RETURN_IF_ERROR(cudnn_status(api, api.backend_create(type, &d), what));
  return Descriptor(&api, d);
}

// The largest power of two up to 16 that divides every pointer: the plan is
// built for that alignment, so it is part of the cache key.
int64_t alignment_of(const ConvPointers& p) {
  const auto a = reinterpret_cast<uintptr_t>(p.x) | reinterpret_cast<uintptr_t>(p.w) | reinterpret_cast<uintptr_t>(p.y);
  int64_t align = 16;
  while (align > 1 && (a % static_cast<uintptr_t>(align)) != 0) align /= 2;
  return align;
}

Result<Descriptor> tensor(const CudnnApi& api, cudnnDataType_t type, const std::vector<int64_t>& sizes,
                          const std::vector<int64_t>& strides, int64_t id, int64_t align) {
  KILN_ASSIGN_OR_RETURN(Descriptor t, make(api, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "cuDNN tensor descriptor"));
  const auto n = static_cast<int64_t>(sizes.size());
  KILN_RETURN_IF_ERROR(t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, "tensor data type"));
  KILN_RETURN_IF_ERROR(t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, n, sizes.data(), "tensor dims"));
  KILN_RETURN_IF_ERROR(t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, n, strides.data(), "tensor strides"));
  KILN_RETURN_IF_ERROR(t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, "tensor id"));
  KILN_RETURN_IF_ERROR(t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment"));
  KILN_RETURN_IF_ERROR(t.finalize("cuDNN tensor descriptor"));
  return t;
}

// Whether strict float32 may use this engine configuration: no tensor cores
// (TF32) and no inputs converted down.
Result<bool> allowed_for_strict_fp32(const CudnnApi& api, const Descriptor& config) {
  KILN_ASSIGN_OR_RETURN(Descriptor engine, make(api, CUDNN_BACKEND_ENGINE_DESCRIPTOR, "cuDNN engine descriptor"));
  cudnnBackendDescriptor_t e = engine.get();
  int64_t got = 0;
  KILN_RETURN_IF_ERROR(cudnn_status(
      api, api.backend_get(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &e),
      "cuDNN engine of a configuration"));
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  KILN_RETURN_IF_ERROR(cudnn_status(api,
                                    api.backend_get(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                                    CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &got, notes),
                                    "cuDNN engine numerical notes"));
  for (int64_t i = 0; i < got; ++i)
    if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)
      return false;
  return true;
}

// A built plan and everything it was built from (kept alive with it), plus
// the last variant pack, reused while the pointers repeat.
struct Plan {
  bool none = false;  // the backend API offered no engine: use the legacy API
  std::vector<Descriptor> parts;
  Descriptor plan;
  int64_t workspace = 0;
  Descriptor pack;
  ConvPointers pack_ptrs;
  void* pack_workspace = nullptr;
};

// The operation graph for `p` (its descriptors appended to `parts`).
Result<cudnnBackendDescriptor_t> operation_graph(const CudnnApi& api, cudnnHandle_t handle, const ConvProblem& p,
                                                 int64_t align, std::vector<Descriptor>& parts) {
  KILN_ASSIGN_OR_RETURN(Descriptor x, tensor(api, p.io_type, p.x_sizes, p.x_strides, kX, align));
  KILN_ASSIGN_OR_RETURN(Descriptor w, tensor(api, p.io_type, p.w_sizes, p.w_strides, kW, align));
  KILN_ASSIGN_OR_RETURN(Descriptor y, tensor(api, p.io_type, p.y_sizes, p.y_strides, kY, align));

  KILN_ASSIGN_OR_RETURN(Descriptor conv, make(api, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "cuDNN convolution"));
  const auto nsp = static_cast<int64_t>(p.pad.size());
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  KILN_RETURN_IF_ERROR(conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &p.compute_type,
                                "convolution compute type"));
  KILN_RETURN_IF_ERROR(conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode,
                                "convolution mode"));
  KILN_RETURN_IF_ERROR(conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsp, "spatial dims"));
  KILN_RETURN_IF_ERROR(conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, nsp, p.dilation.data(),
                                "dilations"));
  KILN_RETURN_IF_ERROR(conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, nsp, p.stride.data(),
                                "strides"));
  KILN_RETURN_IF_ERROR(conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, nsp, p.pad.data(), "paddings"));
  KILN_RETURN_IF_ERROR(conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, nsp, p.pad.data(),
                                "paddings"));
  KILN_RETURN_IF_ERROR(conv.finalize("cuDNN convolution descriptor"));

  const bool f64 = p.compute_type == CUDNN_DATA_DOUBLE;
  const float one_f = 1.0f, zero_f = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const cudnnBackendAttributeType_t scalar = f64 ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  // The forward and the backward-data operation take the same six
  // attributes under their own names. A transposed convolution is the data
  // gradient of the forward one whose input is our output (dx) and whose
  // output is our input (dy), so its x/y descriptors trade places.
  struct OpAttributes {
    cudnnBackendDescriptorType_t kind;
    cudnnBackendAttributeName_t in, weight, out, conv, alpha, beta;
    const char* what;
  };
  static constexpr OpAttributes kForward{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                                         "cuDNN forward op"};
  static constexpr OpAttributes kBackwardData{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                                              "cuDNN backward-data op"};
  const OpAttributes& a = p.transposed ? kBackwardData : kForward;
  KILN_ASSIGN_OR_RETURN(Descriptor op, make(api, a.kind, a.what));
  KILN_RETURN_IF_ERROR(op.set_desc(a.in, x, "convolution input"));
  KILN_RETURN_IF_ERROR(op.set_desc(a.weight, w, "convolution weight"));
  KILN_RETURN_IF_ERROR(op.set_desc(a.out, y, "convolution output"));
  KILN_RETURN_IF_ERROR(op.set_desc(a.conv, conv, "convolution descriptor"));
  KILN_RETURN_IF_ERROR(op.set(a.alpha, scalar, 1, alpha, "convolution alpha"));
  KILN_RETURN_IF_ERROR(op.set(a.beta, scalar, 1, beta, "convolution beta"));
  KILN_RETURN_IF_ERROR(op.finalize("cuDNN convolution operation"));

  KILN_ASSIGN_OR_RETURN(Descriptor graph, make(api, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "cuDNN operation graph"));
  // The handle attributes are deprecated in favour of device-property
  // descriptors from cuDNN 9.x on, but every cuDNN 9 runtime accepts them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  KILN_RETURN_IF_ERROR(graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "graph handle"));
#pragma GCC diagnostic pop
  KILN_RETURN_IF_ERROR(graph.set_desc(CUDNN_ATTR_OPERATIONGRAPH_OPS, op, "graph ops"));
  KILN_RETURN_IF_ERROR(graph.finalize("cuDNN operation graph"));
  const cudnnBackendDescriptor_t g = graph.get();
  for (Descriptor* d : {&x, &w, &y, &conv, &op, &graph}) parts.push_back(std::move(*d));
  return g;
}

// Runs the plan with the given pointers: the variant pack is rebuilt only
// when they (or the workspace) changed since the last call of this plan.
Error execute(const CudnnApi& api, cudnnHandle_t handle, Plan& plan, const ConvPointers& ptrs, int device,
              cudaStream_t stream) {
  DeviceBuffer ws;
  if (plan.workspace > 0) {
    KILN_ASSIGN_OR_RETURN(ws, DeviceBuffer::allocate(static_cast<size_t>(plan.workspace), device, stream));
  }
  void* workspace = ws.get();
  if (plan.pack.get() == nullptr || plan.pack_ptrs.x != ptrs.x || plan.pack_ptrs.w != ptrs.w ||
      plan.pack_ptrs.y != ptrs.y || plan.pack_workspace != workspace) {
    plan.pack = Descriptor();
    KILN_ASSIGN_OR_RETURN(Descriptor pack, make(api, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "cuDNN variant pack"));
    const int64_t ids[3] = {kX, kW, kY};
    void* data[3] = {const_cast<void*>(ptrs.x), const_cast<void*>(ptrs.w), ptrs.y};
    KILN_RETURN_IF_ERROR(pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids, "variant pack ids"));
    KILN_RETURN_IF_ERROR(pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, data,
                                  "variant pack pointers"));
    KILN_RETURN_IF_ERROR(pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace,
                                  "variant pack workspace"));
    KILN_RETURN_IF_ERROR(pack.finalize("cuDNN variant pack"));
    plan.pack = std::move(pack);
    plan.pack_ptrs = ptrs;
    plan.pack_workspace = workspace;
  }
  KILN_RETURN_IF_ERROR(cudnn_status(api, api.set_stream(handle, stream), "cudnnSetStream"));
  return cudnn_status(api, api.backend_execute(handle, plan.plan.get(), plan.pack.get()), "cudnnBackendExecute");
}

// Builds the plan for `p` by trying the heuristic's engine configurations in
// order (mode A, then the fallback list) until one finalizes and runs; the
// convolution has then run once. plan.none when none did.
Error build_and_run(const CudnnApi& api, cudnnHandle_t handle, const ConvProblem& p, const ConvPointers& ptrs,
                    int device, cudaStream_t stream, Plan& plan) {
  const int64_t align = alignment_of(ptrs);
  KILN_ASSIGN_OR_RETURN(cudnnBackendDescriptor_t graph, operation_graph(api, handle, p, align, plan.parts));
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    KILN_ASSIGN_OR_RETURN(Descriptor heur, make(api, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "cuDNN heuristics"));
    KILN_RETURN_IF_ERROR(heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph,
                                  "heuristics graph"));
    KILN_RETURN_IF_ERROR(heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode"));
    if (heur.finalize("cuDNN heuristics") != Error::Ok) continue;
    int64_t count = 0;
    KILN_RETURN_IF_ERROR(cudnn_status(
        api, api.backend_get(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
        "cuDNN heuristics result count"));
    std::vector<Descriptor> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      KILN_ASSIGN_OR_RETURN(Descriptor c, make(api, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "cuDNN engine config"));
      raw.push_back(c.get());
      configs.push_back(std::move(c));
    }
    int64_t got = 0;
    if (count > 0)
      KILN_RETURN_IF_ERROR(cudnn_status(api,
                                        api.backend_get(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
                                        "cuDNN heuristics results"));
    for (int64_t i = 0; i < got; ++i) {
      if (p.fp32_strict) {
        KILN_ASSIGN_OR_RETURN(bool ok, allowed_for_strict_fp32(api, configs[static_cast<size_t>(i)]));
        if (!ok) continue;
      }
      KILN_ASSIGN_OR_RETURN(Descriptor candidate, make(api, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "cuDNN plan"));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      KILN_RETURN_IF_ERROR(candidate.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "plan handle"));
#pragma GCC diagnostic pop
      KILN_RETURN_IF_ERROR(candidate.set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                              configs[static_cast<size_t>(i)], "plan engine config"));
      if (candidate.finalize("cuDNN execution plan") != Error::Ok) continue;  // engine cannot take this problem
      int64_t workspace = 0;
      KILN_RETURN_IF_ERROR(cudnn_status(api,
                                        api.backend_get(candidate.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                        CUDNN_TYPE_INT64, 1, &got, &workspace),
                                        "cuDNN plan workspace size"));
      if (workspace < 0 || static_cast<size_t>(workspace) > kMaxWorkspace) continue;
      plan.plan = std::move(candidate);
      plan.workspace = workspace;
      plan.parts.push_back(std::move(configs[static_cast<size_t>(i)]));
      if (execute(api, handle, plan, ptrs, device, stream) == Error::Ok) return Error::Ok;
      plan.parts.pop_back();
      plan.plan = Descriptor();
      plan.pack = Descriptor();
    }
  }
  plan.none = true;
  plan.parts.clear();
  return set_error(Error::NotSupported, "cuDNN's backend API has no engine for this convolution");
}

using PlanCache = std::unordered_map<std::string, std::unique_ptr<Plan>>;

}  // namespace

Error run_planned_convolution(const CudnnApi& api, cudnnHandle_t handle, const std::string& key,
                              const std::function<ConvProblem()>& describe, const ConvPointers& ptrs, int device,
                              cudaStream_t stream) {
  // Per thread, like the handle the plans are built with. Never destroyed
  // (see cudnn_handle): the plans stay valid until exit.
  thread_local PlanCache* cache = new PlanCache();
  const std::string full_key = key + "a" + std::to_string(alignment_of(ptrs));
  auto it = cache->find(full_key);
  if (it != cache->end()) {
    if (it->second->none) return set_error(Error::NotSupported, "cuDNN's backend API has no engine for this convolution");
    return execute(api, handle, *it->second, ptrs, device, stream);
  }
  // Building tries engines until one runs and may allocate: not inside a CUDA
  // graph capture (a thread that never ran this convolution eagerly). The
  // legacy API, which captures fine, takes this call; the plan is built on
  // this thread's next eager call.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone)
    return set_error(Error::NotSupported, "cuDNN plans are not built during CUDA graph capture");
  if (cache->size() >= kMaxPlans) cache->clear();
  auto plan = std::make_unique<Plan>();
  const Error status = build_and_run(api, handle, describe(), ptrs, device, stream, *plan);
  if (status == Error::Ok || plan->none) cache->emplace(full_key, std::move(plan));
  return status;
}

}  // namespace kiln::cudadev
