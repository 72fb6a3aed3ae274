// aoti_torch_cpu_index_Tensor, aoti_torch_cpu_index_put: advanced indexing
// (x[idx], x[mask], x[:, idx] = v). As ATen: `indices` holds one optional
// entry per leading dimension (null = a full slice); int64/int32 entries are
// index tensors that broadcast together, negative values counting from the
// end once; a bool (or legacy uint8) mask of k dimensions stands for the k
// index tensors of its nonzero coordinates and must match self's sizes there.
// The result has the broadcast index shape in place of the indexed dimensions
// when those are adjacent, else in front of the remaining dimensions.
// index_put is out-of-place: a clone of self (self's strides when dense) with
// the indexed elements set to (or, with accumulate, incremented by, duplicates
// adding up) `values`, which has self's dtype and broadcasts to the shape
// index would give. index's result has the strides ATen's TensorIterator
// gives it (self's memory order where self is permuted). Every index is range-checked before anything is read or
// written.
#include <cstring>
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/strided_index.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/index_util.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

// The elements an index expression selects: result = pre dims x broadcast
// index shape x post dims, each pre/post dim one of self's unindexed dims.
struct IndexPlan {
  std::vector<int64_t> result_sizes;
  std::vector<int64_t> pre_dims, post_dims;
  std::vector<int64_t> bshape;
  std::vector<int64_t> idx_dims;
  std::vector<std::vector<int64_t>> idx_values;  // each numel(bshape) values, wrapped and checked
  std::vector<std::vector<int64_t>> idx_strides;  // each index tensor's strides broadcast to bshape
};

struct RawIndex {
  int64_t dim;
  std::vector<int64_t> shape;
  std::vector<int64_t> values;   // row-major over shape
  std::vector<int64_t> strides;  // the index tensor's own (a mask's coordinates: 1)
};

/// `values` (row-major over `shape`) broadcast to `to`.
std::vector<int64_t> broadcast_values(const std::vector<int64_t>& values, std::span<const int64_t> shape,
                                      std::span<const int64_t> to) {
  const std::vector<int64_t> cs = contiguous_strides(shape);
  std::vector<int64_t> strides(to.size(), 0);
  const size_t lead = to.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) strides[lead + i] = shape[i] == 1 ? 0 : cs[i];
  std::vector<int64_t> out;
  for_each_offset(to, strides, [&](int64_t, int64_t off) { out.push_back(values[static_cast<size_t>(off)]); });
  return out;
}

Result<IndexPlan> plan_index(const Tensor& self, const AtenTensorHandle** indices, int64_t len) {
  if (len < 0) return aoti::invalid("argument 'indices' has negative length " + std::to_string(len));
  if (len > 0 && indices == nullptr) return aoti::invalid("argument 'indices' is null");
  const int64_t rank = self.dim();
  std::vector<RawIndex> raw;
  int64_t d = 0;
  auto too_many = [&](int64_t got) {
    return aoti::invalid("argument 'indices': too many indices for tensor of dimension " + std::to_string(rank) +
                         " (got " + std::to_string(got) + ")");
  };
  for (int64_t i = 0; i < len; ++i) {
    const AtenTensorHandle* slot = indices[i];
    if (slot == nullptr || *slot == nullptr) {
      if (++d > rank) return too_many(d);
      continue;
    }
    KILN_ASSIGN_OR_RETURN(Tensor * t, cpu_tensor_arg(*slot, "indices"));
    if (t->dtype() == DType::Bool || t->dtype() == DType::UInt8) {
      const int64_t k = t->dim();
      if (k == 0) return aoti::invalid("argument 'indices': a 0-d boolean index is not supported");
      if (d + k > rank) return too_many(d + k);
      for (int64_t j = 0; j < k; ++j)
        if (t->size(j) != self.size(d + j))
          return aoti::invalid("argument 'indices': the shape of the mask " + aoti::shape_string(t->sizes()) +
                               " at index " + std::to_string(i) + " does not match the shape of the indexed tensor " +
                               aoti::shape_string(self.sizes()) + " at index " + std::to_string(d + j));
      const std::vector<int64_t> m = read_elements<int64_t>(*t);
      std::vector<std::vector<int64_t>> coords(static_cast<size_t>(k));
      std::vector<int64_t> c;
      for (size_t p = 0; p < m.size(); ++p) {
        if (m[p] == 0) continue;
        unravel(static_cast<int64_t>(p), t->sizes(), c);
        for (int64_t j = 0; j < k; ++j) coords[static_cast<size_t>(j)].push_back(c[static_cast<size_t>(j)]);
      }
      for (int64_t j = 0; j < k; ++j) {
        const int64_t n = static_cast<int64_t>(coords[static_cast<size_t>(j)].size());
        raw.push_back(RawIndex{d + j, {n}, std::move(coords[static_cast<size_t>(j)]), {1}});
      }
      d += k;
    } else if (t->dtype() == DType::Int64 || t->dtype() == DType::Int32) {
      if (d + 1 > rank) return too_many(d + 1);
      raw.push_back(RawIndex{d, t->sizes(), read_elements<int64_t>(*t), t->strides()});
      ++d;
    } else {
      return aoti::invalid(std::string("argument 'indices': tensors used as indices must be int64, int32, bool or "
                                       "uint8, got ") + dtype_name(t->dtype()) + " at index " + std::to_string(i));
    }
  }
  if (raw.empty()) return aoti::invalid("argument 'indices': at least one index must be a tensor (not all null)");

  IndexPlan plan;
  plan.bshape = raw[0].shape;
  for (size_t k = 1; k < raw.size(); ++k) {
    auto b = broadcast_shapes(plan.bshape, raw[k].shape);
    if (!b) {
      std::string shapes;
      for (size_t j = 0; j < raw.size(); ++j) shapes += (j ? ", " : "") + aoti::shape_string(raw[j].shape);
      return aoti::invalid("argument 'indices': shape mismatch: indexing tensors could not be broadcast together "
                           "with shapes " + shapes);
    }
    plan.bshape = *b;
  }
  bool adjacent = true;
  for (size_t k = 0; k < raw.size(); ++k) {
    plan.idx_dims.push_back(raw[k].dim);
    if (k > 0 && raw[k].dim != raw[k - 1].dim + 1) adjacent = false;
    std::vector<int64_t> v = broadcast_values(raw[k].values, raw[k].shape, plan.bshape);
    const int64_t size = self.size(raw[k].dim);
    for (int64_t& x : v) {
      KILN_ASSIGN_OR_RETURN(x, checked_index(x, size, raw[k].dim, "indices", true));
    }
    plan.idx_values.push_back(std::move(v));
    std::vector<int64_t> st(plan.bshape.size(), 0);
    const size_t lead = plan.bshape.size() - raw[k].shape.size();
    for (size_t j = 0; j < raw[k].shape.size(); ++j)
      st[lead + j] = raw[k].shape[j] == 1 && plan.bshape[lead + j] != 1 ? 0 : raw[k].strides[j];
    plan.idx_strides.push_back(std::move(st));
  }
  const int64_t first = raw.front().dim;
  for (int64_t j = 0; j < rank; ++j) {
    bool indexed = false;
    for (int64_t x : plan.idx_dims) indexed |= x == j;
    if (indexed) continue;
    (adjacent && j < first ? plan.pre_dims : plan.post_dims).push_back(j);
  }
  for (int64_t j : plan.pre_dims) plan.result_sizes.push_back(self.size(j));
  plan.result_sizes.insert(plan.result_sizes.end(), plan.bshape.begin(), plan.bshape.end());
  for (int64_t j : plan.post_dims) plan.result_sizes.push_back(self.size(j));
  return plan;
}

/// The result's strides as ATen's TensorIterator allocates them: its operands
/// are self restrided to the result shape (stride 0 across the index dims) and
/// each index tensor (stride 0 across self's dims); dimensions are ordered
/// fastest first by comparing the operands' strides in turn, skipping an
/// operand broadcast in either dimension, equal strides putting the smaller
/// size first.
std::vector<int64_t> result_strides(const IndexPlan& plan, const Tensor& self) {
  const size_t n = plan.result_sizes.size(), npre = plan.pre_dims.size(), nb = plan.bshape.size();
  std::vector<std::vector<int64_t>> ops;
  std::vector<int64_t> src(n, 0);
  for (size_t j = 0; j < npre; ++j) src[j] = self.stride(plan.pre_dims[j]);
  for (size_t j = 0; j < plan.post_dims.size(); ++j) src[npre + nb + j] = self.stride(plan.post_dims[j]);
  ops.push_back(std::move(src));
  for (const std::vector<int64_t>& st : plan.idx_strides) {
    std::vector<int64_t> full(n, 0);
    for (size_t j = 0; j < nb; ++j) full[npre + j] = st[j];
    ops.push_back(std::move(full));
  }
  return aoti::elementwise_strides(plan.result_sizes, ops);
}

/// Offsets (in elements, under `t`'s strides) of the elements of `t` (self's
/// sizes) that `plan` selects, in the row-major order of the result.
std::vector<int64_t> selected_offsets(const IndexPlan& plan, const Tensor& t) {
  auto offsets_of = [&](const std::vector<int64_t>& dims) {
    std::vector<int64_t> sizes, strides, out;
    for (int64_t j : dims) {
      sizes.push_back(t.size(j));
      strides.push_back(t.stride(j));
    }
    for_each_offset(sizes, strides, [&](int64_t, int64_t off) { out.push_back(off); });
    return out;
  };
  const std::vector<int64_t> pre = offsets_of(plan.pre_dims), post = offsets_of(plan.post_dims);
  const size_t nb = plan.idx_values.empty() ? 0 : plan.idx_values[0].size();
  std::vector<int64_t> mid(nb, 0);
  for (size_t k = 0; k < plan.idx_dims.size(); ++k)
    for (size_t b = 0; b < nb; ++b) mid[b] += plan.idx_values[k][b] * t.stride(plan.idx_dims[k]);
  std::vector<int64_t> out;
  out.reserve(pre.size() * nb * post.size());
  for (int64_t p : pre)
    for (int64_t m : mid)
      for (int64_t q : post) out.push_back(p + m + q);
  return out;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_index_Tensor(AtenTensorHandle self_h, const AtenTensorHandle** indices,
                                                            int64_t indices_len_, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_index_Tensor", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(IndexPlan plan, plan_index(*self, indices, indices_len_));
    const std::vector<int64_t> strides = result_strides(plan, *self);
    KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::empty_strided(plan.result_sizes, strides, self->dtype(),
                                                            Device{DeviceType::CPU, 0}));
    const int64_t es = static_cast<int64_t>(element_size(self->dtype()));
    const char* src = static_cast<const char*>(self->data_ptr());
    char* dst = static_cast<char*>(out.data_ptr());
    // Gathering whole rows (x[idx] on an embedding table): the unindexed
    // trailing dims are one contiguous block in self and in the result.
    std::vector<int64_t> post_sizes, post_strides;
    for (int64_t j : plan.post_dims) {
      post_sizes.push_back(self->size(j));
      post_strides.push_back(self->stride(j));
    }
    int64_t row = 1;
    for (int64_t x : post_sizes) row *= x;
    bool rows = row > 1 && strides == contiguous_strides(plan.result_sizes);
    const std::vector<int64_t> post_contig = contiguous_strides(post_sizes);
    for (size_t j = 0; rows && j < post_sizes.size(); ++j) rows = post_sizes[j] == 1 || post_strides[j] == post_contig[j];
    if (rows) {
      IndexPlan heads = plan;
      heads.post_dims.clear();
      const std::vector<int64_t> offs = selected_offsets(heads, *self);
      const size_t bytes = static_cast<size_t>(row * es);
      for (size_t k = 0; k < offs.size(); ++k) std::memcpy(dst + k * bytes, src + offs[k] * es, bytes);
      return return_tensor(std::move(out), ret0, "ret0");
    }
    const std::vector<int64_t> offs = selected_offsets(plan, *self);
    for_each_offset(plan.result_sizes, strides, [&](int64_t k, int64_t off) {
      std::memcpy(dst + off * es, src + offs[static_cast<size_t>(k)] * es, static_cast<size_t>(es));
    });
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_index_put(AtenTensorHandle self_h, const AtenTensorHandle** indices,
                                                         int64_t indices_len_, AtenTensorHandle values_h,
                                                         int32_t accumulate, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_index_put", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * values, cpu_tensor_arg(values_h, "values"));
    KILN_RETURN_IF_ERROR(same_dtype(*values, self->dtype(), "values"));
    KILN_ASSIGN_OR_RETURN(IndexPlan plan, plan_index(*self, indices, indices_len_));
    auto b = broadcast_shapes(values->sizes(), plan.result_sizes);
    if (!b || *b != plan.result_sizes)
      return aoti::invalid("argument 'values' of shape " + aoti::shape_string(values->sizes()) +
                           " cannot be broadcast to the indexing result of shape " +
                           aoti::shape_string(plan.result_sizes));
    KILN_ASSIGN_OR_RETURN(Tensor out, clone_preserving(*self));
    const std::vector<int64_t> offs = selected_offsets(plan, out);
    const Tensor v = expand_view(*values, plan.result_sizes);
    std::vector<int64_t> voffs;
    voffs.reserve(offs.size());
    for_each_offset(v.sizes(), v.strides(), [&](int64_t, int64_t off) { voffs.push_back(off); });
    const DType dt = self->dtype();
    const int64_t es = static_cast<int64_t>(element_size(dt));
    const char* src = static_cast<const char*>(v.data_ptr());
    char* dst = static_cast<char*>(out.data_ptr());
    if (!accumulate) {
      for (size_t k = 0; k < offs.size(); ++k)
        std::memcpy(dst + offs[k] * es, src + voffs[k] * es, static_cast<size_t>(es));
    } else {
      KILN_RETURN_IF_ERROR(visit_kind(dt, [&](auto tag) -> Error {
        using T = decltype(tag);
        for (size_t k = 0; k < offs.size(); ++k) {
          void* p = dst + offs[k] * es;
          write_element<T>(p, dt, read_element<T>(p, dt) + read_element<T>(src + voffs[k] * es, dt));
        }
        return Error::Ok;
      }));
    }
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
