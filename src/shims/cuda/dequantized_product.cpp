#include "shims/cuda/dequantized_product.h"

#include "shims/cuda/matmul.h"
#include "shims/cuda/op_util.h"

namespace kiln::cudadev {
namespace {

// The temporary's size: small next to the weights of a large layer, large
// enough that each block's product still fills the GPU.
constexpr int64_t kBlockBytes = int64_t{32} << 20;

}  // namespace

Error dequantized_product(const TensorRef& x, int64_t n, int64_t col_multiple, const DequantizeBlock& dequantize,
                          const TensorRef& out, cudaStream_t stream) {
  const int64_t m = x.sizes[0], k = x.sizes[1];
  const int64_t elem = static_cast<int64_t>(element_size(x.dtype));
  int64_t cols = kBlockBytes / (elem * (k > 0 ? k : 1)) / col_multiple * col_multiple;
  if (cols < col_multiple) cols = col_multiple;
  if (cols > n) cols = n;
  if (cols == 0) return Error::Ok;
  KILN_ASSIGN_OR_RETURN(DeviceBuffer block,
                        DeviceBuffer::allocate(static_cast<size_t>(cols * k * elem), x.device_index, stream));
  // One stream: a block is overwritten only after the product that reads it.
  for (int64_t j0 = 0; j0 < n; j0 += cols) {
    const int64_t width = n - j0 < cols ? n - j0 : cols;
    KILN_RETURN_IF_ERROR(dequantize(j0, width, block.get(), stream));
    TensorRef wt = x;  // block^T: [k, width], strides {1, k}
    wt.data = block.get();
    wt.sizes = {k, width};
    wt.strides = {1, k};
    TensorRef part = out;
    part.data = static_cast<char*>(out.data) + j0 * elem;
    part.sizes = {m, width};
    part.strides = {n, 1};
    KILN_RETURN_IF_ERROR(matmul_into(part, x, wt, 1.0, 0.0));
  }
  return Error::Ok;
}

}  // namespace kiln::cudadev
