// Reading and writing numpy `.npy` files as kiln::Tensor.
//
// Reader: format versions 1.0, 2.0 and 3.0; little-endian, big-endian
// (byte-swapped on load) and byte-order-free descriptors for the numeric
// types Kiln has (f2 f4 f8, i1 i2 i4 i8, u1 u2 u4 u8, b1); C order and Fortran
// order (returned as a column-major strided tensor over the file's bytes).
// Every problem (bad magic, unsupported version or dtype, malformed header,
// truncated or oversized data) is an error whose message starts with the
// file's name.
//
// Writer: version 1.0 (2.0 only if the header would not fit), C order,
// header padded so the data starts at a multiple of 64 bytes, as numpy does.
// Types numpy lacks (bfloat16, float8) are refused; convert them first with
// to_float32 (tensor_util.h).
//
// Ownership: tensors returned own their memory (a CPU allocation freed with
// the last view). Functions are thread-safe; they share no state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::tools {

/// The little-endian numpy descriptor ("<f4", "|b1") for `dtype`, or nullptr
/// when numpy has no such type (bfloat16, float8).
const char* npy_descr(DType dtype) noexcept;

/// Parses a whole `.npy` image held in memory (copied into the tensor).
/// `source` names it in error messages. InvalidArgument on any defect.
Result<Tensor> parse_npy(std::span<const uint8_t> bytes, const std::string& source);

/// Reads `path`. IoError if it cannot be read, InvalidArgument if it is not a
/// valid `.npy` Kiln can represent.
Result<Tensor> read_npy(const std::string& path);

/// The `.npy` image of `tensor` (any strides, any device Kiln can copy from).
/// NotSupported for dtypes numpy lacks.
Result<std::vector<uint8_t>> encode_npy(const Tensor& tensor);

/// Writes encode_npy(tensor) to `path`, replacing an existing file atomically
/// (a reader of the old file keeps its bytes; a failed write leaves it as it
/// was and no temporary file behind). IoError names the path.
Error write_npy(const std::string& path, const Tensor& tensor);

}  // namespace kiln::tools
