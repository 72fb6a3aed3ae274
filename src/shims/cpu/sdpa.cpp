// aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu: softmax(q k^T *
// scale + mask) v per (batch, head), with the per-row logsumexp that ATen's
// CPU flash kernel also returns. Computed in float32 (bf16/fp16 inputs are
// widened) with two GEMMs per (batch, head); the (batch, head) pairs are
// spread over the model call's OpenMP threads (parallel_for.h).
//
// Long queries (L >= kBlockedMinRows and more than kBlockScoreFloats scores
// per head, on AVX-512) run in blocks of query rows: k^T (scaled) and v are
// packed for packed_gemm once per key/value head a thread meets, and each
// block's score rows stay in L2 from the first product through the softmax
// to the second. One L x S score matrix per head (9 MB for Whisper's 1500
// frames) went through memory three times, and OpenBLAS packed k and v again
// on every call. Smaller heads keep one BLAS product each (measured the
// same), and a decode step's one row reads k and v once without packing.
//
// Semantics follow the ATen op:
//  - q [B, Hq, L, E], k and v [B, Hkv, S, E]; Hkv may divide Hq (grouped-query
//    attention: query head h reads key/value head h / (Hq / Hkv)).
//  - dropout_p must be 0 (inference); is_causal masks j > i (top-left aligned).
//  - attn_mask broadcasts to [B, Hq, L, S]: float masks are added to the
//    scores, bool masks keep positions where true.
//  - scale defaults to 1/sqrt(E).
//  - output has q's shape and, like empty_like(q), q's strides when q is dense;
//    logsumexp is float32 [B, Hq, L] laid out as [B, L, Hq] transposed.
//  - rows with every position masked produce output 0 and logsumexp -inf.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "shims/cpu/cpu_shims.h"
#include "shims/common/layout_util.h"
#include "devices/cpu/float_io.h"
#include "devices/cpu/gemm.h"
#include "devices/cpu/packed_gemm.h"
#include "shims/cpu/op_args.h"
#include "devices/cpu/parallel_for.h"
#include "devices/cpu/softmax_row.h"

using namespace kiln;
using namespace kiln::aoti;
using namespace kiln::cpu;

namespace {

// Mask element strides broadcast to [B, H, L, S] (0 where broadcast).
Result<std::array<int64_t, 4>> mask_strides(const Tensor& mask, const std::array<int64_t, 4>& full) {
  if (mask.dim() < 1 || mask.dim() > 4)
    return invalid("attn_mask must have 1 to 4 dims, got " + mask.describe());
  std::array<int64_t, 4> st{0, 0, 0, 0};
  const size_t lead = 4 - mask.sizes().size();
  for (size_t i = 0; i < mask.sizes().size(); ++i) {
    const int64_t ms = mask.sizes()[i], fs = full[lead + i];
    if (ms == fs) {
      st[lead + i] = mask.strides()[i];
    } else if (ms != 1) {
      return invalid("attn_mask " + shape_string(mask.sizes()) + " does not broadcast to " + shape_string(full));
    }
  }
  return st;
}

// The float32 elements of a [B, H, rows, cols] tensor: its own memory for
// float32 tensors (any strides), else a contiguous float32 copy.
struct Heads {
  const float* data;
  std::array<int64_t, 4> strides;
  MatrixView<const float> matrix(int64_t b, int64_t h, int64_t rows, int64_t cols) const {
    return {data + b * strides[0] + h * strides[1], rows, cols, strides[2], strides[3]};
  }
};

Heads float_heads(const Tensor& t, std::vector<float>& scratch) {
  if (t.dtype() == DType::Float32) return {t.data<const float>(), {t.stride(0), t.stride(1), t.stride(2), t.stride(3)}};
  scratch = to_floats(t);
  const int64_t h = t.size(1), r = t.size(2), c = t.size(3);
  return {scratch.data(), {h * r * c, r * c, c, 1}};
}

// Query rows from which the blocked path pays for packing k and v per head.
constexpr int64_t kBlockedMinRows = 16;
// Floats of score rows per block: 64 K floats (256 KB) stay in L2 between the
// two products.
constexpr int64_t kBlockScoreFloats = 64 * 1024;

// Query rows per block: as many score rows of length S as fit the block, a
// multiple of packed_gemm's tile height, at least one tile.
int64_t block_rows(int64_t S) {
  const int64_t rows = kBlockScoreFloats / std::max<int64_t>(S, 1) / kPackedTileRows * kPackedTileRows;
  return std::max(rows, kPackedTileRows);
}

// row[j] += mask[j] (float masks) or row[j] = -inf where mask[j] is false.
void add_mask(float* row, int64_t n, const char* mask, int64_t step_bytes, DType dtype) {
  if (dtype == DType::Bool) {
    for (int64_t j = 0; j < n; ++j)
      if (*reinterpret_cast<const uint8_t*>(mask + j * step_bytes) == 0)
        row[j] = -std::numeric_limits<float>::infinity();
  } else {
    for (int64_t j = 0; j < n; ++j) row[j] += read_float(mask + j * step_bytes, dtype);
  }
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    AtenTensorHandle* attn_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return guarded("aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(Tensor * q, cpu_tensor_arg(query, "query"));
    KILN_ASSIGN_OR_RETURN(Tensor * k, cpu_tensor_arg(key, "key"));
    KILN_ASSIGN_OR_RETURN(Tensor * v, cpu_tensor_arg(value, "value"));
    if (dropout_p != 0.0) return invalid("dropout_p must be 0 for inference, got " + std::to_string(dropout_p));
    if (q->dim() != 4 || k->dim() != 4 || v->dim() != 4)
      return invalid("query, key and value must be 4-d [B, H, L, E], got " + q->describe() + ", " + k->describe() +
                     ", " + v->describe());
    if (!is_float_dtype(q->dtype()))
      return set_error(Error::NotSupported, std::string("dtype ") + dtype_name(q->dtype()) + " is not supported");
    KILN_RETURN_IF_ERROR(same_dtype(*k, q->dtype(), "key"));
    KILN_RETURN_IF_ERROR(same_dtype(*v, q->dtype(), "value"));
    const int64_t B = q->size(0), H = q->size(1), L = q->size(2), E = q->size(3);
    const int64_t Hkv = k->size(1), S = k->size(2);
    if (k->size(0) != B || v->size(0) != B || v->size(1) != Hkv || v->size(2) != S)
      return invalid("key " + shape_string(k->sizes()) + " and value " + shape_string(v->sizes()) +
                     " do not match query " + shape_string(q->sizes()));
    if (k->size(3) != E || v->size(3) != E)
      return invalid("query, key and value must have the same head size, got " + std::to_string(E) + ", " +
                     std::to_string(k->size(3)) + ", " + std::to_string(v->size(3)));
    if (Hkv < 1 || H % Hkv != 0)
      return invalid("key/value heads " + std::to_string(Hkv) + " do not divide query heads " + std::to_string(H));

    const Tensor* mask = nullptr;
    std::array<int64_t, 4> mst{};
    if (attn_mask != nullptr && *attn_mask != nullptr) {
      KILN_ASSIGN_OR_RETURN(mask, cpu_tensor_arg(*attn_mask, "attn_mask"));
      if (mask->dtype() != DType::Bool && !is_float_dtype(mask->dtype()))
        return invalid(std::string("attn_mask dtype ") + dtype_name(mask->dtype()) + " is not bool or floating");
      KILN_ASSIGN_OR_RETURN(mst, mask_strides(*mask, {B, H, L, S}));
    }
    const float sc = scale ? static_cast<float>(*scale) : static_cast<float>(1.0 / std::sqrt(static_cast<double>(E)));

    const auto out_strides = strides_like(q->sizes(), q->strides());
    KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::empty_strided(q->sizes(), out_strides, q->dtype(), Device{}));
    const std::vector<int64_t> lse_sizes{B, H, L};
    const std::vector<int64_t> lse_strides{L * H, 1, H};
    KILN_ASSIGN_OR_RETURN(Tensor lse, Tensor::empty_strided(lse_sizes, lse_strides, DType::Float32, Device{}));

    std::vector<float> qs, ks, vs;
    const Heads qh = float_heads(*q, qs), kh = float_heads(*k, ks), vh = float_heads(*v, vs);
    // float32 output is written in place through its strides; others via a float32 buffer.
    std::vector<float> o;
    float* odata = nullptr;
    std::array<int64_t, 4> ost{};
    if (out.dtype() == DType::Float32) {
      odata = out.data<float>();
      ost = {out.stride(0), out.stride(1), out.stride(2), out.stride(3)};
    } else {
      o.resize(static_cast<size_t>(B * H * L * E));
      odata = o.data();
      ost = {H * L * E, L * E, E, 1};
    }
    // The mask is read in place through its broadcast strides.
    const char* mbase = mask ? static_cast<const char*>(mask->data_ptr()) : nullptr;
    const auto melem = mask ? static_cast<int64_t>(element_size(mask->dtype())) : 0;
    float* lse_data = lse.data<float>();
    // Masks, the causal cut and the softmax of score rows [i0, i0 + rows) of (b, h), whose
    // scores start at `block`, over their first `cols` keys (the rest are not read).
    auto softmax_rows = [&](float* block, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t cols) {
      for (int64_t i = i0; i < i0 + rows; ++i) {
        float* row = block + (i - i0) * S;
        if (mask) add_mask(row, cols, mbase + (b * mst[0] + h * mst[1] + i * mst[2]) * melem, mst[3] * melem,
                           mask->dtype());
        // Causal: only keys j <= i take part; the rest get probability 0.
        const int64_t n = is_causal ? std::min(i + 1, cols) : cols;
        for (int64_t j = n; j < cols; ++j) row[j] = 0.0f;
        lse_data[b * L * H + i * H + h] = softmax_in_place(row, n);
      }
    };
    // Blocked only where the whole score matrix would outgrow the block: below that the
    // one-product path measured the same.
    const bool blocked = L >= kBlockedMinRows && L * S > kBlockScoreFloats && E >= 1 && packed_gemm_available() &&
                         qh.strides[3] == 1 && ost[3] == 1;
    if (blocked) {
      // Work items are (batch, head, block of query rows), in that order, so that few heads still
      // fill the team; a thread's contiguous range packs each key/value head it meets once (the
      // query heads that share one under GQA included). Each item is computed the same way on
      // whichever thread takes it, so the result does not depend on the thread count.
      const int64_t rows_per_block = std::min(block_rows(S), L);
      const int64_t blocks = (L + rows_per_block - 1) / rows_per_block;
      KILN_RETURN_IF_ERROR(parallel_for(B * H * blocks, 1, [&](int64_t begin, int64_t end) -> Error {
        std::vector<float> scores(static_cast<size_t>(rows_per_block * S));
        std::vector<float> keys(static_cast<size_t>(packed_b_floats(E, S)));
        std::vector<float> values(static_cast<size_t>(packed_b_floats(S, E)));
        int64_t packed = -1;  // b * Hkv + hk of the key/value head in `keys` and `values`
        for (int64_t item = begin; item < end; ++item) {
          const int64_t bh = item / blocks, i0 = item % blocks * rows_per_block;
          const int64_t b = bh / H, h = bh % H;
          const int64_t hk = h / (H / Hkv);
          if (b * Hkv + hk != packed) {
            // k^T (E x S) with the scale folded in, and v (S x E), as packed_gemm's right operands.
            const MatrixView<const float> km = kh.matrix(b, hk, S, E), vm = vh.matrix(b, hk, S, E);
            pack_b(km.data, E, S, km.col_stride, km.row_stride, keys.data());
            for (float& x : keys) x *= sc;
            pack_b(vm.data, S, E, vm.row_stride, vm.col_stride, values.data());
            packed = b * Hkv + hk;
          }
          const MatrixView<const float> qm = qh.matrix(b, h, L, E);
          float* ohead = odata + b * ost[0] + h * ost[1];
          const int64_t rows = std::min(rows_per_block, L - i0);
          // Causal: the block's last row sees keys up to its own index, none past them.
          const int64_t cols = is_causal ? std::min(S, i0 + rows) : S;
          packed_gemm(rows, cols, E, qm.data + i0 * qm.row_stride, qm.row_stride, keys.data(), nullptr,
                      scores.data(), S);
          softmax_rows(scores.data(), b, h, i0, rows, cols);
          // P @ v over the first `cols` keys, one 32-column panel of v at a time (a panel holds
          // all S rows).
          for (int64_t j0 = 0; j0 < E; j0 += kPackedPanelCols)
            packed_gemm(rows, std::min(kPackedPanelCols, E - j0), cols, scores.data(), S, values.data() + j0 * S,
                        nullptr, ohead + i0 * ost[2] + j0, ost[2]);
        }
        return Error::Ok;
      }));
    } else {
      // (batch, head) pairs are independent and each is computed the same way on
      // whichever thread takes it, so the result does not depend on the thread
      // count. Their GEMMs run single-threaded inside the region.
      KILN_RETURN_IF_ERROR(parallel_for(B * H, 1, [&](int64_t begin, int64_t end) -> Error {
        std::vector<float> scores(static_cast<size_t>(L * S));
        for (int64_t bh = begin; bh < end; ++bh) {
          const int64_t b = bh / H, h = bh % H;
          const int64_t hk = h / (H / Hkv);
          // scores = scale * q @ k^T
          KILN_RETURN_IF_ERROR(gemm<float>(qh.matrix(b, h, L, E), kh.matrix(b, hk, S, E).transposed(),
                                           {scores.data(), L, S, S, 1}, sc, 0.0f));
          softmax_rows(scores.data(), b, h, 0, L, S);
          // out = P @ v
          KILN_RETURN_IF_ERROR(gemm<float>({scores.data(), L, S, S, 1}, vh.matrix(b, hk, S, E),
                                           {odata + b * ost[0] + h * ost[1], L, E, ost[2], ost[3]}, 1.0f, 0.0f));
        }
        return Error::Ok;
      }));
    }
    if (out.dtype() != DType::Float32) store_floats(o.data(), out);
    AtenTensorHandle h0 = new_handle(std::move(out));
    AtenTensorHandle h1 = h0 ? new_handle(std::move(lse)) : nullptr;
    if (h1 == nullptr) {
      delete_handle(h0);
      return set_error(Error::OutOfMemory, "out of host memory for a tensor handle");
    }
    *ret0 = h0;
    *ret1 = h1;
    return Error::Ok;
  });
}

}  // extern "C"
