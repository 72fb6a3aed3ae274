// aoti_torch_cpu__weight_int4pack_mm_cpu_tensor: ATen's int4 weight-only
// product on a CPU-packed weight (quantized::int4mm_packed_weight_cpu, which
// Inductor calls for aten._weight_int4pack_mm_for_cpu: torchao's int4
// weight-only layout on the CPU). x [M, K] float32/bfloat16/float16 times a
// weight of 4-bit codes packed by aten._convert_weight_to_int4pack_for_cpu,
// w[n, k] = (code - 8) * scale + zero with (scale, zero) =
// qScaleAndZeros[k / group, n], summed in float32 and rounded once to x's
// dtype.
//
// The packing (ATen's layout, read here as the bytes it defines): columns in
// blocks of 64, a last shorter block holding N % 64 of them. A full block is
// K rows of 32 bytes, byte j of row k holding column j's code in its low
// nibble and column j + 32's in its high one; the last block is K rows of
// (its columns / 2) bytes, byte j / 2 holding column j, low nibble for even j.
//
// Each thread takes whole blocks: it dequantizes a block's columns into a
// float32 buffer (the block's packed bytes, 32 K, read once while in cache)
// and multiplies x by it, so the weight is read once per call whatever M is.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "devices/cpu/float_io.h"
#include "devices/cpu/gemm.h"
#include "devices/cpu/parallel_for.h"
#include "devices/cpu/quantized_rows.h"
#include "devices/cpu/small_gemm.h"
#include "shims/common/shim_util.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::aoti;
using namespace kiln::cpu;

namespace {

constexpr const char* kOp = "_weight_int4pack_mm_cpu_tensor";
// Columns a packed block holds (ATen's BLOCK_N for this packing).
constexpr int64_t kPackBlock = 64;

struct Args {
  const Tensor* x;
  const Tensor* w;
  const Tensor* scale_zero;
  int64_t m, k, n, group;
  const uint8_t* packed = nullptr;  // w's bytes in row-major order (the packing's order)
};

// w's bytes as the packing defines them, [N, K / 2] row-major: w itself when
// contiguous, else gathered into `copy`.
const uint8_t* packed_bytes(const Tensor& w, std::vector<uint8_t>& copy) {
  if (w.is_contiguous()) return w.data<uint8_t>();
  const int64_t rows = w.size(0), cols = w.size(1);
  copy.resize(static_cast<size_t>(rows * cols));
  const uint8_t* p = w.data<uint8_t>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) copy[static_cast<size_t>(r * cols + c)] = p[r * w.stride(0) + c * w.stride(1)];
  return copy.data();
}

bool is_float(DType dt) { return dt == DType::Float32 || dt == DType::BFloat16 || dt == DType::Float16; }

Result<int64_t> group_size_of(const Tensor& g) {
  if (g.dtype() != DType::Int64)
    return invalid(std::string(kOp) + ": argument 'qGroupSize' has dtype " + dtype_name(g.dtype()) +
                   ", expected int64 (a tensor holding the group size)");
  if (g.numel() != 1)
    return invalid(std::string(kOp) + ": argument 'qGroupSize' has " + std::to_string(g.numel()) +
                   " elements, expected one (the group size)");
  const int64_t group = *g.data<int64_t>();
  if (group != 32 && group != 64 && group != 128 && group != 256)
    return invalid(std::string(kOp) + ": qGroupSize is " + std::to_string(group) + ", expected 32, 64, 128 or 256");
  return group;
}

Result<Args> check_args(AtenTensorHandle x_h, AtenTensorHandle w_h, AtenTensorHandle g_h, AtenTensorHandle sz_h) {
  KILN_ASSIGN_OR_RETURN(Tensor * x, cpu_tensor_arg(x_h, "X"));
  KILN_ASSIGN_OR_RETURN(Tensor * w, cpu_tensor_arg(w_h, "w"));
  KILN_ASSIGN_OR_RETURN(Tensor * g, cpu_tensor_arg(g_h, "qGroupSize"));
  KILN_ASSIGN_OR_RETURN(Tensor * sz, cpu_tensor_arg(sz_h, "qScaleAndZeros"));
  const std::string op = kOp;
  if (!is_float(x->dtype()))
    return set_error(Error::NotSupported, op + ": argument 'X' has dtype " + dtype_name(x->dtype()) +
                                              ", expected float32, bfloat16 or float16");
  if (x->dim() != 2) return invalid(op + ": argument 'X' must be 2-d [M, K], got shape " + shape_string(x->sizes()));
  if (w->dtype() != DType::UInt8)
    return invalid(op + ": argument 'w' has dtype " + dtype_name(w->dtype()) +
                   ", expected uint8 (4-bit codes packed by _convert_weight_to_int4pack_for_cpu)");
  if (w->dim() != 2) return invalid(op + ": argument 'w' must be 2-d [N, K / 2], got shape " + shape_string(w->sizes()));
  KILN_ASSIGN_OR_RETURN(int64_t group, group_size_of(*g));
  const int64_t m = x->size(0), k = x->size(1), n = w->size(0);
  if (w->size(1) * 2 != k)
    return invalid(op + ": argument 'X' has K = " + std::to_string(k) + " but 'w' has shape " +
                   shape_string(w->sizes()) + ", which packs K = " + std::to_string(w->size(1) * 2));
  if (n % 16 != 0)
    return invalid(op + ": argument 'w' has N = " + std::to_string(n) +
                   " columns, expected a multiple of 16 (the CPU packing holds columns in blocks of 16)");
  if (k % group != 0)
    return invalid(op + ": K = " + std::to_string(k) + " is not a multiple of qGroupSize " + std::to_string(group));
  if (sz->dtype() != x->dtype())
    return invalid(op + ": argument 'qScaleAndZeros' has dtype " + dtype_name(sz->dtype()) + ", expected " +
                   dtype_name(x->dtype()) + " (X's dtype)");
  if (sz->dim() != 3 || sz->size(0) != k / group || sz->size(1) != n || sz->size(2) != 2)
    return invalid(op + ": argument 'qScaleAndZeros' has shape " + shape_string(sz->sizes()) + ", expected [" +
                   std::to_string(k / group) + ", " + std::to_string(n) + ", 2] ([K / qGroupSize, N, 2])");
  return Args{x, w, sz, m, k, n, group};
}

// Columns n0 .. n0 + cols - 1 (one packed block) dequantized into out
// (cols x K floats, row j = column n0 + j).
void dequantize_block(const Args& a, int64_t n0, int64_t cols, float* out) {
  const int64_t k = a.k;
  const uint8_t* block = a.packed + n0 * (k / 2);
  const bool full = cols == kPackBlock;
  const int64_t row_bytes = full ? kPackBlock / 2 : cols / 2;
  for (int64_t kk = 0; kk < k; ++kk) {
    const uint8_t* row = block + kk * row_bytes;
    for (int64_t j = 0; j < cols; ++j) {
      const uint8_t byte = full ? row[j % 32] : row[j / 2];
      const bool low = full ? j < 32 : j % 2 == 0;
      out[j * k + kk] = static_cast<float>((low ? byte & 0xF : byte >> 4) - 8);
    }
  }
  // (code - 8) * scale + zero, the (scale, zero) of column n and group kk / group.
  const Tensor& sz = *a.scale_zero;
  const DType dt = sz.dtype();
  const size_t es = element_size(dt);
  const auto* base = static_cast<const unsigned char*>(sz.data_ptr());
  const int64_t s0 = sz.stride(0), s1 = sz.stride(1), s2 = sz.stride(2);
  for (int64_t j = 0; j < cols; ++j) {
    float* col = out + j * k;
    for (int64_t g = 0; g < k / a.group; ++g) {
      const int64_t at = g * s0 + (n0 + j) * s1;
      const float scale = read_float(base + static_cast<size_t>(at) * es, dt);
      const float zero = read_float(base + static_cast<size_t>(at + s2) * es, dt);
      for (int64_t i = g * a.group; i < (g + 1) * a.group; ++i) col[i] = col[i] * scale + zero;
    }
  }
}

Error product(const Args& a, const float* x, float* out) {
  const int64_t m = a.m, k = a.k, n = a.n;
  const int64_t blocks = (n + kPackBlock - 1) / kPackBlock;
  const bool few = m <= kQuantizedDotMaxRows;
  const bool small = !few && m <= kSmallGemmMaxRows && small_gemm_available();
  return parallel_for(blocks, 1, [&](int64_t begin, int64_t end) -> Error {
    std::vector<float> w(static_cast<size_t>(std::min(kPackBlock, n) * k));
    float acc[kQuantizedDotMaxRows];
    for (int64_t b = begin; b < end; ++b) {
      const int64_t n0 = b * kPackBlock, cols = std::min(kPackBlock, n - n0);
      dequantize_block(a, n0, cols, w.data());
      if (few) {
        for (int64_t j = 0; j < cols; ++j) {
          dot_rows(w.data() + j * k, k, x, k, m, acc);
          for (int64_t r = 0; r < m; ++r) out[r * n + n0 + j] = acc[r];
        }
      } else if (small) {
        small_gemm(m, cols, k, 1.0f, x, k, w.data(), k, 0.0f, out + n0, n);
      } else {
        const MatrixView<const float> wt{w.data(), cols, k, k, 1};
        KILN_RETURN_IF_ERROR(gemm<float>({x, m, k, k, 1}, wt.transposed(), {out + n0, m, cols, n, 1}, 1.0f, 0.0f));
      }
    }
    return Error::Ok;
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__weight_int4pack_mm_cpu_tensor(AtenTensorHandle X, AtenTensorHandle w,
                                                                              AtenTensorHandle qGroupSize,
                                                                              AtenTensorHandle qScaleAndZeros,
                                                                              AtenTensorHandle* ret0) {
  return guarded("aoti_torch_cpu__weight_int4pack_mm_cpu_tensor", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(Args a, check_args(X, w, qGroupSize, qScaleAndZeros));
    const int64_t out_sizes[] = {a.m, a.n};
    KILN_ASSIGN_OR_RETURN(Tensor result, new_cpu_tensor(out_sizes, a.x->dtype()));
    if (result.numel() == 0) return return_tensor(std::move(result), ret0, "ret0");
    if (a.k == 0) {  // an empty sum: all-zero bytes are 0.0 in every float dtype
      std::memset(result.data_ptr(), 0, result.nbytes());
      return return_tensor(std::move(result), ret0, "ret0");
    }
    std::vector<uint8_t> gathered;
    a.packed = packed_bytes(*a.w, gathered);
    const std::vector<float> xs = to_floats(*a.x);
    std::vector<float> out(static_cast<size_t>(a.m * a.n));
    KILN_RETURN_IF_ERROR(product(a, xs.data(), out.data()));
    store_floats(out.data(), result);
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

}  // extern "C"
