// The memory layout a method's compiled code reads each input in, and whether
// a caller's tensor already has it.
//
// Why this exists: AOTInductor compiles every kernel for the strides of the
// example input seen at export (row-major, or channels_last when the example
// was, ...) and the generated code indexes inputs with those compile-time
// strides. It never looks at a tensor's own strides (its stride checks run
// only under AOTI_RUNTIME_CHECK_INPUTS), so a view with other strides (a
// transposed or sliced array, a Fortran-order file, an expanded tensor with
// stride 0) would be read as if it had the compiled layout: wrong values, or
// reads past the end of the view's memory. The program records that layout per
// input (TensorSpec::dim_order) and the backend copies every input that does
// not already have it into it before any kernel runs; one that has it is passed
// as it is, without a copy.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln {

/// Strides (in elements) of a dense tensor of `sizes` laid out in `dim_order`
/// (outermost dimension first; empty: row-major). `dim_order` must be empty
/// or a permutation of [0, sizes.size()) (ProgramFile guarantees it for the
/// specs it returns). Sizes 0 and 1 count as 1 in the products, as in
/// contiguous_strides and torch.
std::vector<int64_t> dense_strides(std::span<const int64_t> sizes, std::span<const uint8_t> dim_order);

/// Whether a tensor of `sizes` and `strides` is already dense in `dim_order`:
/// every dimension of size > 1 has its dense stride. Strides of size-1
/// dimensions are ignored (no index ever multiplies them by anything but 0),
/// and an empty tensor always matches (it has no memory to read). Allocates
/// nothing: it runs on every input of every call.
bool has_dense_layout(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                      std::span<const uint8_t> dim_order) noexcept;

/// Whether `strides` are exactly the dense strides of `dim_order`, size-1
/// dimensions included. A tensor that has_dense_layout but fails this is
/// passed as a view with the dense strides (same memory, no copy): some
/// kernels read a size-1 dimension's stride too (a CPU convolution picks its
/// memory format from it), so they must see exactly what was compiled.
bool has_exact_dense_strides(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                             std::span<const uint8_t> dim_order) noexcept;

/// A new CPU tensor with the values of `input` (a CPU tensor whose view lies
/// inside its storage, as validate_inputs checks), dense in `dim_order`. Reads
/// only the elements the view addresses (a stride-0 view reads its few
/// elements many times).
Result<Tensor> host_copy_in_layout(const Tensor& input, std::span<const uint8_t> dim_order);

/// Whether `dim_order` says anything but row-major (empty and the identity
/// permutation both mean row-major).
bool is_row_major_order(std::span<const uint8_t> dim_order) noexcept;

/// "row-major", "channels_last (0, 2, 3, 1)" or "dim order (1, 0)", for
/// messages.
std::string describe_dim_order(std::span<const uint8_t> dim_order);

/// "[12, 1]".
std::string strides_text(std::span<const int64_t> strides);

}  // namespace kiln
