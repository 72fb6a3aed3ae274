// aoti_torch_cuda__weight_int4pack_mm: the int4 weight-only product of
// torchao's int4 weight-only config and gpt-fast (the "tinygemm" layout).
//
// self (m x k, bfloat16) @ W^T, where W (n x k) is int4 codes packed by ATen's
// CUDA _convert_weight_to_int4pack into int32
// [n / 8][k / (innerKTiles * 16)][32][innerKTiles / 2] (innerKTiles 2, 4 or 8,
// read from the last dimension) and dequantized per group of qGroupSize
// values of k as (q - 8) * scale + zero with (scale, zero) =
// qScaleAndZeros[k / qGroupSize][n] (bfloat16). The result is a new
// contiguous [m, n] bfloat16 tensor. Up to 16 rows (decode) a kernel reads
// the packed weight directly; more rows dequantize it to bfloat16 in column
// blocks multiplied by cuBLASLt (kernels/int4_mm_kernel.h, whose .cu says
// why the layout is what it is).
//
// The checks are ATen's CUDA op's (bfloat16 self, a 4-d int32 mat2 with 32
// lanes, group size 32, 64, 128 or 256 dividing k, qScaleAndZeros
// [groups, n, 2]) with messages, plus what ATen leaves unchecked and would
// read out of bounds or misread: k must be a multiple of innerKTiles * 16
// matching mat2's second dimension, qScaleAndZeros must be bfloat16 with at
// least k / qGroupSize groups (ATen reads only those), all on one device.
// Unlike ATen's kernel, any strides and offsets are taken (ATen requires a
// contiguous self and mat2 and assumes a contiguous qScaleAndZeros), and an
// empty self or mat2 gives an empty result where ATen's launch fails.
#include <cstdint>
#include <string>
#include <vector>

#include "devices/cuda/kernels/int4_mm_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/dequantized_product.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

Error same_device(const TensorRef& t, const TensorRef& ref, const char* name) {
  if (t.device_index != ref.device_index)
    return aoti::invalid(std::string("argument '") + name + "' is on CUDA device " + std::to_string(t.device_index) +
                         " but self on " + std::to_string(ref.device_index));
  return Error::Ok;
}

Error expect_dtype(const TensorRef& t, DType want, const char* name) {
  if (t.dtype != want)
    return aoti::invalid(std::string("argument '") + name + "' has dtype " + dtype_name(t.dtype) + ", expected " +
                         dtype_name(want));
  return Error::Ok;
}

Error int4pack_args(const TensorRef& x, const TensorRef& w, int64_t group_size, const TensorRef& qsz) {
  KILN_RETURN_IF_ERROR(expect_dtype(x, DType::BFloat16, "self"));
  if (x.dim() != 2) return aoti::invalid("argument 'self' must be 2-d, got shape " + aoti::shape_string(x.sizes));
  KILN_RETURN_IF_ERROR(expect_dtype(w, DType::Int32, "mat2"));
  if (w.dim() != 4)
    return aoti::invalid("argument 'mat2' must be 4-d ([n / 8, k / (innerKTiles * 16), 32, innerKTiles / 2], as "
                         "_convert_weight_to_int4pack packs it), got shape " + aoti::shape_string(w.sizes));
  const int64_t words = w.sizes[3];
  if (words != 1 && words != 2 && words != 4)
    return aoti::invalid("argument 'mat2' has last dimension " + std::to_string(words) +
                         ", expected 1, 2 or 4 (innerKTiles / 2 for innerKTiles 2, 4 or 8)");
  if (w.sizes[2] != 32)
    return aoti::invalid("argument 'mat2' has shape " + aoti::shape_string(w.sizes) +
                         ", expected 32 lanes in dimension 2");
  const int64_t k = x.sizes[1], n = w.sizes[0] * 8, tile_k = words * 2 * 16;
  if (k <= 0 || k % tile_k != 0 || w.sizes[1] != k / tile_k)
    return aoti::invalid("argument 'mat2' has shape " + aoti::shape_string(w.sizes) + ", which packs k = " +
                         std::to_string(w.sizes[1] * tile_k) + " in groups of " + std::to_string(tile_k) +
                         ", but self has k = " + std::to_string(k));
  if (group_size != 32 && group_size != 64 && group_size != 128 && group_size != 256)
    return aoti::invalid("qGroupSize is " + std::to_string(group_size) + ", expected 32, 64, 128 or 256");
  if (k % group_size != 0)
    return aoti::invalid("k = " + std::to_string(k) + " is not a multiple of qGroupSize " + std::to_string(group_size));
  KILN_RETURN_IF_ERROR(expect_dtype(qsz, DType::BFloat16, "qScaleAndZeros"));
  if (qsz.dim() != 3 || qsz.sizes[0] < k / group_size || qsz.sizes[1] != n || qsz.sizes[2] != 2)
    return aoti::invalid("argument 'qScaleAndZeros' has shape " + aoti::shape_string(qsz.sizes) + ", expected [" +
                         std::to_string(k / group_size) + ", " + std::to_string(n) + ", 2] (k / qGroupSize, n)");
  KILN_RETURN_IF_ERROR(same_device(w, x, "mat2"));
  return same_device(qsz, x, "qScaleAndZeros");
}

// Up to this many rows the direct kernel runs (it reads the packed weight
// once per four rows); past it the weight is dequantized to bfloat16 in
// column blocks multiplied on the tensor cores (dequantized_product.h), as
// ATen's kernel multiplies its bfloat16-dequantized tiles.
constexpr int64_t kDirectRows = 16;

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__weight_int4pack_mm(AtenTensorHandle self_h, AtenTensorHandle mat2_h,
                                                                    int64_t qGroupSize,
                                                                    AtenTensorHandle qScaleAndZeros_h,
                                                                    AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda__weight_int4pack_mm", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef x, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef w, read_tensor(mat2_h, "mat2"));
    KILN_ASSIGN_OR_RETURN(TensorRef q, read_tensor(qScaleAndZeros_h, "qScaleAndZeros"));
    KILN_RETURN_IF_ERROR(int4pack_args(x, w, qGroupSize, q));
    const int64_t m = x.sizes[0], k = x.sizes[1], n = w.sizes[0] * 8;
    KILN_ASSIGN_OR_RETURN(OwnedHandle result,
                          new_contiguous(std::vector<int64_t>{m, n}, DType::BFloat16, x.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef r, read_tensor(result.get(), "ret0"));
    const Int4PackedWeight packed{static_cast<const int32_t*>(w.data), w.strides[0], w.strides[1], w.strides[2],
                                  w.strides[3], static_cast<int>(w.sizes[3] * 2)};
    // The kernels launch on self's device whichever device is current.
    ScopedDevice scoped(x.device_index);
    KILN_RETURN_IF_ERROR(scoped.status());
    cudaStream_t stream = current_stream(x.device_index);
    if (m <= kDirectRows || n == 0) {
      KILN_RETURN_IF_ERROR(launch_weight_int4pack_mm(x.data, x.strides[0], x.strides[1], packed, q.data,
                                                     q.strides[0], q.strides[1], q.strides[2], qGroupSize, r.data, m,
                                                     n, k, stream));
    } else {
      auto block = [&](int64_t j0, int64_t cols, void* out, cudaStream_t s) {
        return launch_dequantize_int4pack(packed, q.data, q.strides[0], q.strides[1], q.strides[2], qGroupSize,
                                          j0 / 8, cols / 8, k, out, s);
      };
      KILN_RETURN_IF_ERROR(dequantized_product(x, n, 8, block, r, stream));
    }
    return return_handle(result, ret0, "ret0");
  });
}

}  // extern "C"
