// aoti_torch_cuda_index_Tensor, aoti_torch_cuda_index_put: advanced indexing
// (x[idx], x[mask], x[:, i, j]) and its assignment (x[mask] = v, with
// accumulate x[idx] += v, duplicates adding up) with ATen's rules, on the
// device. `indices` holds one optional
// entry per leading dimension (null = a full slice); int64/int32 entries are
// index tensors that broadcast together, negative values counting from the
// end once; a bool (or legacy uint8) mask of k dimensions stands for the k
// index tensors of its nonzero coordinates (aoti_torch_cuda_nonzero, which
// synchronises to learn their count, as ATen's does) and must match self's
// sizes there. The result has the broadcast index shape in place of the
// indexed dimensions when those are adjacent, else in front of the remaining
// dimensions, laid out as ATen's TensorIterator lays it out. index_put is
// out-of-place: a clone of self (self's strides when dense) with the indexed
// elements set to (or atomically incremented by; bool ORs) `values`, which
// has self's dtype and broadcasts to the shape index would give.
//
// Every index value is checked before the result is handed back: outside a
// CUDA graph capture an out-of-range value is an error naming it (one
// synchronisation to read the check's flag); under capture nothing may
// synchronise, and an out-of-range value reads a clamped element instead.
// Index tensors (or values) on the CPU run the op host-staged (host_staged.h).
#include <limits>
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device/strided_copy.h"
#include "devices/cuda/kernels/index_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/host_staged.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

extern "C" {
// libkiln's CPU ops (exported as kiln_torch_cpu_*), for operands on the CPU.
AOTITorchError aoti_torch_cpu_index_Tensor(AtenTensorHandle self, const AtenTensorHandle** indices,
                                           int64_t indices_len_, AtenTensorHandle* ret0);
AOTITorchError aoti_torch_cpu_index_put(AtenTensorHandle self, const AtenTensorHandle** indices, int64_t indices_len_,
                                        AtenTensorHandle values, int32_t accumulate, AtenTensorHandle* ret0);
}

// An index tensor as the plan sees it: the dimension of self it selects
// along, its shape, its values' strides and where they are.
struct RawIndex {
  int64_t dim = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::vector<int64_t> layout_strides;  // what TensorIterator sees (a mask's coordinates: 1)
  const void* data = nullptr;
  DType dtype = DType::Int64;
};

bool on_cpu(AtenTensorHandle h) {
  int32_t device_type = 0;
  return h != nullptr && aoti_torch_get_device_type(h, &device_type) == 0 &&
         device_type != static_cast<int32_t>(DeviceType::CUDA);
}

bool any_index_on_cpu(const AtenTensorHandle** indices, int64_t len) {
  for (int64_t i = 0; i < len && indices != nullptr; ++i)
    if (indices[i] != nullptr && on_cpu(*indices[i])) return true;
  return false;
}

Error too_many(int64_t rank, int64_t got) {
  return aoti::invalid("argument 'indices': too many indices for tensor of dimension " + std::to_string(rank) +
                       " (got " + std::to_string(got) + ")");
}

/// The index tensors of `indices`, masks turned into their coordinates (kept
/// alive in `keep`).
Result<std::vector<RawIndex>> read_indices(const TensorRef& self, const AtenTensorHandle** indices, int64_t len,
                                           std::vector<OwnedHandle>& keep) {
  if (len < 0) return aoti::invalid("argument 'indices' has negative length " + std::to_string(len));
  if (len > 0 && indices == nullptr) return aoti::invalid("argument 'indices' is null");
  const int64_t rank = self.dim();
  std::vector<RawIndex> raw;
  int64_t d = 0;
  for (int64_t i = 0; i < len; ++i) {
    const AtenTensorHandle* slot = indices[i];
    if (slot == nullptr || *slot == nullptr) {
      if (++d > rank) return too_many(rank, d);
      continue;
    }
    KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(*slot, "indices"));
    if (t.dtype == DType::Bool || t.dtype == DType::UInt8) {
      const int64_t k = t.dim();
      if (k == 0) return aoti::invalid("argument 'indices': a 0-d boolean index is not supported");
      if (d + k > rank) return too_many(rank, d + k);
      for (int64_t j = 0; j < k; ++j)
        if (t.sizes[static_cast<size_t>(j)] != self.sizes[static_cast<size_t>(d + j)])
          return aoti::invalid("argument 'indices': the shape of the mask " + aoti::shape_string(t.sizes) +
                               " at index " + std::to_string(i) + " does not match the shape of the indexed tensor " +
                               aoti::shape_string(self.sizes) + " at index " + std::to_string(d + j));
      AtenTensorHandle coords_h = nullptr;
      if (aoti_torch_cuda_nonzero(*slot, &coords_h) != 0) return Error::InvalidArgument;  // message already set
      keep.emplace_back(coords_h);
      KILN_ASSIGN_OR_RETURN(TensorRef coords, read_tensor(coords_h, "indices"));
      const int64_t n = coords.sizes[0];
      for (int64_t j = 0; j < k; ++j) {
        RawIndex r;
        r.dim = d + j;
        r.shape = {n};
        r.strides = {coords.strides[0]};
        r.layout_strides = {1};
        r.data = static_cast<const int64_t*>(coords.data) + j * coords.strides[1];
        r.dtype = DType::Int64;
        raw.push_back(std::move(r));
      }
      d += k;
    } else if (t.dtype == DType::Int64 || t.dtype == DType::Int32) {
      if (d + 1 > rank) return too_many(rank, d + 1);
      RawIndex r;
      r.dim = d;
      r.shape = t.sizes;
      r.strides = t.strides;
      r.layout_strides = t.strides;
      r.data = t.data;
      r.dtype = t.dtype;
      raw.push_back(std::move(r));
      ++d;
    } else {
      return aoti::invalid(std::string("argument 'indices': tensors used as indices must be int64, int32, bool or "
                                       "uint8, got ") + dtype_name(t.dtype) + " at index " + std::to_string(i));
    }
  }
  if (raw.empty()) return aoti::invalid("argument 'indices': at least one index must be a tensor (not all null)");
  if (raw.size() > static_cast<size_t>(kMaxIndexTensors))
    return aoti::invalid("argument 'indices': more than " + std::to_string(kMaxIndexTensors) + " index tensors");
  return raw;
}

/// `strides` of an operand of `shape` broadcast to `to` (0 on broadcast dims).
std::vector<int64_t> broadcast_strides(std::span<const int64_t> shape, std::span<const int64_t> strides,
                                       std::span<const int64_t> to) {
  std::vector<int64_t> out(to.size(), 0);
  const size_t lead = to.size() - shape.size();
  for (size_t j = 0; j < shape.size(); ++j) out[lead + j] = shape[j] == 1 && to[lead + j] != 1 ? 0 : strides[j];
  return out;
}

/// Reads one index value back for the error message.
Result<int64_t> read_index_value(const RawIndex& r, int64_t position, std::span<const int64_t> bshape,
                                 cudaStream_t stream) {
  const std::vector<int64_t> st = broadcast_strides(r.shape, r.strides, bshape);
  int64_t rest = position, off = 0;
  for (size_t d = bshape.size(); d-- > 0;) {
    off += (rest % bshape[d]) * st[d];
    rest /= bshape[d];
  }
  int64_t v64 = 0;
  int32_t v32 = 0;
  const size_t bytes = element_size(r.dtype);
  void* dst = r.dtype == DType::Int32 ? static_cast<void*>(&v32) : static_cast<void*>(&v64);
  KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, static_cast<const char*>(r.data) + off * static_cast<int64_t>(bytes),
                                            bytes, cudaMemcpyDeviceToHost, stream));
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return r.dtype == DType::Int32 ? static_cast<int64_t>(v32) : v64;
}

// What an indexing expression selects: the result = pre dims x index shape x
// post dims, each pre/post dim one of self's unindexed dims.
struct IndexPlan {
  std::vector<RawIndex> raw;
  std::vector<OwnedHandle> keep;  // mask coordinates the raw indices point into
  std::vector<int64_t> bshape, pre_dims, post_dims, result_sizes;
  int64_t index_numel = 1;
};

Result<IndexPlan> plan_index(const TensorRef& self, const AtenTensorHandle** indices, int64_t len) {
  IndexPlan p;
  KILN_ASSIGN_OR_RETURN(p.raw, read_indices(self, indices, len, p.keep));
  const std::vector<RawIndex>& raw = p.raw;
  p.bshape = raw[0].shape;
  for (size_t k = 1; k < raw.size(); ++k) {
    Result<std::vector<int64_t>> b = aoti::broadcast_shapes(p.bshape, raw[k].shape, "indices", "indices");
    if (!b.ok()) {
      std::string shapes;
      for (size_t j = 0; j < raw.size(); ++j) shapes += (j ? ", " : "") + aoti::shape_string(raw[j].shape);
      return aoti::invalid("argument 'indices': shape mismatch: indexing tensors could not be broadcast together "
                           "with shapes " + shapes);
    }
    p.bshape = b.value();
  }
  if (p.bshape.size() > static_cast<size_t>(StridedIndexer::kMaxDims))
    return set_error(Error::NotSupported, "index shapes of more than " + std::to_string(StridedIndexer::kMaxDims) +
                                              " dimensions are not supported by this CUDA op");
  for (int64_t s : p.bshape) p.index_numel *= s;
  bool adjacent = true;
  for (size_t k = 1; k < raw.size(); ++k) adjacent &= raw[k].dim == raw[k - 1].dim + 1;
  for (int64_t j = 0; j < self.dim(); ++j) {
    bool indexed = false;
    for (const RawIndex& r : raw) indexed |= r.dim == j;
    if (!indexed) (adjacent && j < raw.front().dim ? p.pre_dims : p.post_dims).push_back(j);
  }
  for (int64_t j : p.pre_dims) p.result_sizes.push_back(self.sizes[static_cast<size_t>(j)]);
  p.result_sizes.insert(p.result_sizes.end(), p.bshape.begin(), p.bshape.end());
  for (int64_t j : p.post_dims) p.result_sizes.push_back(self.sizes[static_cast<size_t>(j)]);
  return p;
}

/// The result's layout as ATen's TensorIterator allocates it: its operands
/// are self restrided to the result shape (stride 0 across the index dims)
/// and each index tensor (stride 0 across self's dims).
std::vector<int64_t> index_result_strides(const IndexPlan& p, const TensorRef& self) {
  const size_t n = p.result_sizes.size(), npre = p.pre_dims.size(), nb = p.bshape.size();
  std::vector<std::vector<int64_t>> operands;
  std::vector<int64_t> self_op(n, 0);
  for (size_t j = 0; j < npre; ++j) self_op[j] = self.strides[static_cast<size_t>(p.pre_dims[j])];
  for (size_t j = 0; j < p.post_dims.size(); ++j)
    self_op[npre + nb + j] = self.strides[static_cast<size_t>(p.post_dims[j])];
  operands.push_back(std::move(self_op));
  for (const RawIndex& r : p.raw) {
    const std::vector<int64_t> st = broadcast_strides(r.shape, r.layout_strides, p.bshape);
    std::vector<int64_t> full(n, 0);
    for (size_t j = 0; j < nb; ++j) full[npre + j] = st[j];
    operands.push_back(std::move(full));
  }
  return aoti::elementwise_strides(p.result_sizes, operands);
}

/// The kernels' view of the plan over a tensor of self's sizes at `strides`
/// (self's for index, the result clone's for index_put).
IndexGather gather_args(const IndexPlan& p, const TensorRef& self, std::span<const int64_t> strides) {
  IndexGather g;
  g.element_bytes = static_cast<int64_t>(self.element_bytes());
  g.npre = static_cast<int>(p.pre_dims.size());
  g.nb = static_cast<int>(p.bshape.size());
  g.npost = static_cast<int>(p.post_dims.size());
  for (size_t j = 0; j < p.pre_dims.size(); ++j) g.pre_strides[j] = strides[static_cast<size_t>(p.pre_dims[j])];
  for (size_t j = 0; j < p.post_dims.size(); ++j) g.post_strides[j] = strides[static_cast<size_t>(p.post_dims[j])];
  g.nindex = static_cast<int>(p.raw.size());
  for (size_t k = 0; k < p.raw.size(); ++k) {
    IndexOperand& ix = g.index[k];
    ix.data = p.raw[k].data;
    ix.dtype = p.raw[k].dtype;
    const std::vector<int64_t> st = broadcast_strides(p.raw[k].shape, p.raw[k].strides, p.bshape);
    for (size_t j = 0; j < st.size(); ++j) ix.strides[j] = st[j];
    ix.dim_size = self.sizes[static_cast<size_t>(p.raw[k].dim)];
    ix.self_stride = strides[static_cast<size_t>(p.raw[k].dim)];
  }
  return g;
}

/// Checks every index value; outside a graph capture an out-of-range one is
/// an error naming it (one synchronisation), under capture nothing is read
/// back and the kernels clamp.
Error check_indices(const IndexPlan& p, const IndexGather& g, int device, cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone || p.index_numel == 0) return Error::Ok;
  const size_t bytes = p.raw.size() * sizeof(unsigned long long);
  KILN_ASSIGN_OR_RETURN(DeviceBuffer flags, DeviceBuffer::allocate(bytes, device, stream));
  auto* first_bad = static_cast<unsigned long long*>(flags.get());
  KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(first_bad, 0xFF, bytes, stream));
  KILN_RETURN_IF_ERROR(launch_index_check(g, p.bshape.data(), p.index_numel, first_bad, stream));
  std::vector<unsigned long long> host(p.raw.size());
  KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host.data(), first_bad, bytes, cudaMemcpyDeviceToHost, stream));
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  for (size_t k = 0; k < p.raw.size(); ++k) {
    if (host[k] == std::numeric_limits<unsigned long long>::max()) continue;
    KILN_ASSIGN_OR_RETURN(int64_t v, read_index_value(p.raw[k], static_cast<int64_t>(host[k]), p.bshape, stream));
    return aoti::invalid("argument 'indices': index " + std::to_string(v) + " is out of bounds for dimension " +
                         std::to_string(p.raw[k].dim) + " with size " + std::to_string(g.index[k].dim_size));
  }
  return Error::Ok;
}

Error index_tensor(AtenTensorHandle self_h, const AtenTensorHandle** indices, int64_t len, AtenTensorHandle* ret0) {
  KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
  KILN_ASSIGN_OR_RETURN(IndexPlan p, plan_index(self, indices, len));
  const std::vector<int64_t> strides = index_result_strides(p, self);
  IndexGather g = gather_args(p, self, self.strides);
  g.self = static_cast<const char*>(self.data);
  KILN_ASSIGN_OR_RETURN(g.result, indexer(p.result_sizes, strides));
  const cudaStream_t stream = current_stream(self.device_index);
  KILN_RETURN_IF_ERROR(check_indices(p, g, self.device_index, stream));
  KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor(p.result_sizes, strides, self.dtype,
                                                    static_cast<int32_t>(DeviceType::CUDA), self.device_index));
  KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
  g.out = static_cast<char*>(o.data);
  KILN_RETURN_IF_ERROR(launch_index_gather(g, o.numel(), stream));
  return return_handle(out, ret0, "ret0");
}

Error index_put(AtenTensorHandle self_h, const AtenTensorHandle** indices, int64_t len, AtenTensorHandle values_h,
                bool accumulate, AtenTensorHandle* ret0) {
  KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
  KILN_ASSIGN_OR_RETURN(TensorRef values, read_tensor(values_h, "values"));
  if (values.dtype != self.dtype)
    return aoti::invalid(std::string("argument 'values' has dtype ") + dtype_name(values.dtype) + ", expected " +
                         dtype_name(self.dtype));
  KILN_ASSIGN_OR_RETURN(IndexPlan p, plan_index(self, indices, len));
  Result<std::vector<int64_t>> b = aoti::broadcast_shapes(values.sizes, p.result_sizes, "values", "indices");
  if (!b.ok() || b.value() != p.result_sizes)
    return aoti::invalid("argument 'values' of shape " + aoti::shape_string(values.sizes) +
                         " cannot be broadcast to the indexing result of shape " + aoti::shape_string(p.result_sizes));
  const cudaStream_t stream = current_stream(self.device_index);

  // The result: a clone of self laid out as ATen's clone (self's strides when dense).
  const std::vector<int64_t> out_strides = aoti::strides_like(self.sizes, self.strides);
  KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor(self.sizes, out_strides, self.dtype,
                                                    static_cast<int32_t>(DeviceType::CUDA), self.device_index));
  KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
  IndexGather g = gather_args(p, self, o.strides);
  g.out = static_cast<char*>(o.data);
  KILN_ASSIGN_OR_RETURN(g.result, indexer(p.result_sizes, contiguous_strides(p.result_sizes)));
  KILN_RETURN_IF_ERROR(check_indices(p, g, self.device_index, stream));
  KILN_RETURN_IF_ERROR(launch_strided_copy(o.data, o.strides.data(), self.data, self.strides.data(),
                                           self.sizes.data(), self.dim(), self.element_bytes(), stream));
  std::vector<int64_t> vstrides(p.result_sizes.size(), 0);
  const size_t lead = p.result_sizes.size() - values.sizes.size();
  for (size_t j = 0; j < values.sizes.size(); ++j)
    vstrides[lead + j] = values.sizes[j] == 1 && p.result_sizes[lead + j] != 1 ? 0 : values.strides[j];
  KILN_ASSIGN_OR_RETURN(StridedIndexer vindex, indexer(p.result_sizes, vstrides));
  int64_t numel = 1;
  for (int64_t s : p.result_sizes) numel *= s;
  KILN_RETURN_IF_ERROR(launch_index_put(g, values.data, self.dtype, vindex, accumulate, numel, stream));
  return return_handle(out, ret0, "ret0");
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_index_Tensor(AtenTensorHandle self, const AtenTensorHandle** indices,
                                                             int64_t indices_len_, AtenTensorHandle* ret0) {
  if (any_index_on_cpu(indices, indices_len_))
    return HostStaged("aoti_torch_cuda_index_Tensor", "aoti_torch_cpu_index_Tensor", "tL.r",
                      "(self, indices, indices_len_, ret0)", &aoti_torch_cpu_index_Tensor)(self, indices,
                                                                                            indices_len_, ret0);
  return aoti::guarded("aoti_torch_cuda_index_Tensor",
                       [&]() -> Error { return index_tensor(self, indices, indices_len_, ret0); });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_index_put(AtenTensorHandle self, const AtenTensorHandle** indices,
                                                          int64_t indices_len_, AtenTensorHandle values,
                                                          int32_t accumulate, AtenTensorHandle* ret0) {
  if (any_index_on_cpu(indices, indices_len_) || on_cpu(values))
    return HostStaged("aoti_torch_cuda_index_put", "aoti_torch_cpu_index_put", "tL.t.r",
                      "(self, indices, indices_len_, values, accumulate, ret0)", &aoti_torch_cpu_index_put)(
        self, indices, indices_len_, values, accumulate, ret0);
  return aoti::guarded("aoti_torch_cuda_index_put", [&]() -> Error {
    return index_put(self, indices, indices_len_, values, accumulate != 0, ret0);
  });
}

}  // extern "C"
