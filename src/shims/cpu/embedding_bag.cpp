// aoti_torch_cpu__embedding_bag, aoti_torch_cpu__embedding_bag_forward_only:
// sums, means or maxima of bags of embedding rows (nn.EmbeddingBag). Bag b
// holds indices[offsets[b]:offsets[b+1]] (the last bag runs to the end unless
// include_last_offset, when offsets' last entry only closes the bags); rows
// equal to padding_idx are left out. Both ops give ATen's four results with
// ATen's CPU values: output [bags, D] in weight's dtype; offset2bag (each
// index's bag, or an empty [0] where ATen's fast sum path skips it: float32,
// float16 or bfloat16 weight with unit row stride, per_sample_weights of unit
// stride, no padding_idx); bag_size (indices per bag minus padded ones,
// zeros for sum, of offsets' length in forward_only); max_indices (for max, the row that gave each maximum, 0 for
// an empty bag; otherwise a copy of bag_size). The aux results have the
// promoted dtype of indices and offsets. Sums accumulate in double (ATen:
// float for float32/16/bfloat16), so float32 sums may differ in the last bit.
// Differences from ATen, on inputs ATen mishandles: 2-d indices are refused
// (ATen's CPU kernel reads them as 1-d and can crash in max mode), and so are
// offsets that decrease, exceed the number of indices or leave indices with
// no bag, and out-of-range indices anywhere (ATen checks only those it reads).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "shims/common/embedding_bag_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/index_util.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

constexpr int64_t kSum = aoti::kEmbeddingBagSum, kMean = aoti::kEmbeddingBagMean, kMax = aoti::kEmbeddingBagMax;

Error write_vec(const std::vector<int64_t>& v, std::span<const int64_t> sizes, DType dtype, AtenTensorHandle* ret,
                const char* name) {
  KILN_ASSIGN_OR_RETURN(Tensor t, new_cpu_tensor(sizes, dtype));
  write_elements(v.data(), t);
  return return_tensor(std::move(t), ret, name);
}

AOTITorchError embedding_bag(const char* fn, AtenTensorHandle weight_h, AtenTensorHandle indices_h,
                             AtenTensorHandle offsets_h, int64_t mode, AtenTensorHandle* psw_h,
                             int32_t include_last_offset, int64_t padding_idx, bool forward_only, AtenTensorHandle* ret0,
                             AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * weight, cpu_tensor_arg(weight_h, "weight"));
    KILN_ASSIGN_OR_RETURN(Tensor * indices, cpu_tensor_arg(indices_h, "indices"));
    KILN_ASSIGN_OR_RETURN(Tensor * offsets, cpu_tensor_arg(offsets_h, "offsets"));
    KILN_ASSIGN_OR_RETURN(Tensor * psw, optional_cpu_tensor_arg(psw_h, "per_sample_weights"));
    const DType wt = weight->dtype();
    std::optional<aoti::ArgShape> psw_shape;
    if (psw) psw_shape = aoti::ArgShape{psw->dtype(), psw->sizes()};
    KILN_ASSIGN_OR_RETURN(aoti::EmbeddingBagShape shape,
                          aoti::embedding_bag_args({wt, weight->sizes()}, {indices->dtype(), indices->sizes()},
                                                   {offsets->dtype(), offsets->sizes()}, mode, psw_shape,
                                                   include_last_offset != 0));
    const int64_t n = shape.count, n_off = shape.num_offsets, bags = shape.bags;
    const int64_t vocab = weight->size(0), dim = weight->size(1);
    const DType aux = shape.aux;

    const std::vector<int64_t> idx = read_elements<int64_t>(*indices);
    const std::vector<int64_t> off = read_elements<int64_t>(*offsets);
    if (n_off > 0 && off[0] != 0)
      return aoti::invalid("argument 'offsets': offsets[0] is " + std::to_string(off[0]) + ", expected 0");
    for (int64_t b = 0; b < n_off; ++b) {
      const int64_t o = off[static_cast<size_t>(b)];
      if (o > n || (b > 0 && o < off[static_cast<size_t>(b - 1)]))
        return aoti::invalid("argument 'offsets': offsets[" + std::to_string(b) + "] is " + std::to_string(o) +
                             ", expected non-decreasing offsets no larger than the " + std::to_string(n) + " indices");
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = idx[static_cast<size_t>(i)];
      if (v < 0 || v >= vocab)
        return aoti::invalid("argument 'indices': index " + std::to_string(v) + " at position " + std::to_string(i) +
                             " is out of range for " + std::to_string(vocab) + " embeddings");
    }

    const bool fast = (wt == DType::Float32 || wt == DType::Float16 || wt == DType::BFloat16) &&
                      weight->stride(1) == 1 && (psw == nullptr || psw->stride(0) == 1) && padding_idx < 0;
    // Bag membership as ATen's offset2bag: the last bag runs to the end.
    std::vector<int64_t> bag_of(static_cast<size_t>(n), 0);
    for (int64_t b = 0; b < bags; ++b) {
      const int64_t end = b + 1 < bags ? off[static_cast<size_t>(b + 1)] : n;
      for (int64_t i = off[static_cast<size_t>(b)]; i < end; ++i) bag_of[static_cast<size_t>(i)] = b;
    }
    // The fast sum/mean path instead ends the last bag at offsets' last entry when there is one past it.
    std::vector<char> used(static_cast<size_t>(n), 1);
    if (fast && mode != kMax && include_last_offset && bags > 0)
      for (int64_t i = off[static_cast<size_t>(bags)]; i < n; ++i) used[static_cast<size_t>(i)] = 0;

    std::vector<int64_t> bag_size(static_cast<size_t>(bags), 0);
    for (int64_t b = 0; b < bags; ++b)
      bag_size[static_cast<size_t>(b)] = (b + 1 < bags ? off[static_cast<size_t>(b + 1)] : n) - off[static_cast<size_t>(b)];
    for (int64_t i = 0; i < n; ++i)
      if (idx[static_cast<size_t>(i)] == padding_idx) --bag_size[static_cast<size_t>(bag_of[static_cast<size_t>(i)])];

    // Only the rows the bags name are read (the table may be large).
    const char* wbase = static_cast<const char*>(weight->data_ptr());
    const int64_t wes = static_cast<int64_t>(element_size(wt)), ws0 = weight->stride(0), ws1 = weight->stride(1);
    auto w_at = [&](int64_t v, int64_t j) { return read_element<double>(wbase + (v * ws0 + j * ws1) * wes, wt); };
    const std::vector<double> ps = psw ? read_elements<double>(*psw) : std::vector<double>{};
    std::vector<double> out(static_cast<size_t>(bags * dim), 0.0);
    std::vector<int64_t> max_idx;
    if (mode == kMax) {
      max_idx.assign(static_cast<size_t>(bags * dim), 0);
      std::vector<char> seen(static_cast<size_t>(bags), 0);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = idx[static_cast<size_t>(i)], b = bag_of[static_cast<size_t>(i)];
        if (v == padding_idx) continue;
        for (int64_t j = 0; j < dim; ++j) {
          const double x = w_at(v, j);
          double& cur = out[static_cast<size_t>(b * dim + j)];
          if (!seen[static_cast<size_t>(b)] || x > cur) {
            cur = x;
            max_idx[static_cast<size_t>(b * dim + j)] = v;
          }
        }
        seen[static_cast<size_t>(b)] = 1;
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = idx[static_cast<size_t>(i)], b = bag_of[static_cast<size_t>(i)];
        if (v == padding_idx || !used[static_cast<size_t>(i)]) continue;
        const double scale = psw ? ps[static_cast<size_t>(i)] : 1.0;
        for (int64_t j = 0; j < dim; ++j)
          out[static_cast<size_t>(b * dim + j)] += scale * w_at(v, j);
      }
    }
    const int64_t out_sizes[2] = {bags, dim};
    KILN_ASSIGN_OR_RETURN(Tensor output, new_cpu_tensor(out_sizes, wt));
    write_elements(out.data(), output);
    if (mode == kMean && output.numel() > 0) {
      // ATen divides the sum already rounded to weight's dtype.
      std::vector<double> rounded = read_elements<double>(output);
      for (int64_t b = 0; b < bags; ++b)
        for (int64_t j = 0; j < dim; ++j)
          rounded[static_cast<size_t>(b * dim + j)] /= static_cast<double>(std::max<int64_t>(bag_size[static_cast<size_t>(b)], 1));
      write_elements(rounded.data(), output);
    }
    if (mode == kSum) std::fill(bag_size.begin(), bag_size.end(), 0);
    KILN_RETURN_IF_ERROR(return_tensor(std::move(output), ret0, "ret0"));
    const int64_t o2b_sizes[1] = {mode == kSum && fast ? 0 : n};
    KILN_RETURN_IF_ERROR(write_vec(bag_of, o2b_sizes, aux, ret1, "ret1"));
    // forward_only's sum leaves bag_size (zeros) with offsets' length, as ATen's does.
    if (mode == kSum && forward_only) bag_size.assign(static_cast<size_t>(n_off), 0);
    const int64_t bs_sizes[1] = {static_cast<int64_t>(bag_size.size())};
    KILN_RETURN_IF_ERROR(write_vec(bag_size, bs_sizes, aux, ret2, "ret2"));
    if (mode == kMax) return write_vec(max_idx, out_sizes, aux, ret3, "ret3");
    return write_vec(bag_size, bs_sizes, aux, ret3, "ret3");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__embedding_bag(
    AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets, int32_t scale_grad_by_freq,
    int64_t mode, int32_t sparse, AtenTensorHandle* per_sample_weights, int32_t include_last_offset,
    int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3) {
  return embedding_bag("aoti_torch_cpu__embedding_bag", weight, indices, offsets, mode, per_sample_weights,
                       include_last_offset, padding_idx, false, ret0, ret1, ret2, ret3);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__embedding_bag_forward_only(
    AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets, int32_t scale_grad_by_freq,
    int64_t mode, int32_t sparse, AtenTensorHandle* per_sample_weights, int32_t include_last_offset,
    int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3) {
  return embedding_bag("aoti_torch_cpu__embedding_bag_forward_only", weight, indices, offsets, mode,
                       per_sample_weights, include_last_offset, padding_idx, true, ret0, ret1, ret2, ret3);
}

}  // extern "C"
