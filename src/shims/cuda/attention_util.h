// Support shared by the attention shims (sdpa.cpp, attention_forward.cpp):
// ATen's result layouts for them, their zero philox outputs, and running
// Kiln's attention kernel on the op's stream.
#pragma once

#include <cstdint>
#include <vector>

#include "devices/cuda/kernels/attention_kernel.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "shims/cuda/tensor_ref.h"

namespace kiln::cudadev {

/// empty_like(query)'s strides for a result of `shape`: query's own when it
/// has the same shape and is dense and non-overlapping, else a dense layout in
/// query's dimension order (as ATen's alloc_with_matching_layout).
std::vector<int64_t> attention_like_query(const TensorRef& q, const std::vector<int64_t>& shape);

/// A zero-filled CPU tensor (the philox seed/offset outputs, which are only
/// meaningful with dropout).
Result<OwnedHandle> zero_cpu_tensor(std::vector<int64_t> sizes, DType dtype);

/// A zero-filled CUDA tensor on `device` (cleared on its current stream).
Result<OwnedHandle> zero_cuda_tensor(std::vector<int64_t> sizes, DType dtype, int device);

/// A new uninitialised CUDA tensor on `device`.
Result<OwnedHandle> new_cuda_tensor(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                    DType dtype, int device);

/// An attention bias's dtype (bool keep-mask, float32 or the query's dtype),
/// device and rank (at most 4) as the kernel takes it.
Error check_attention_bias(const TensorRef& bias, const TensorRef& query, const char* name);

/// Points `p` at `bias` broadcast (right-aligned, size-1 dimensions at stride
/// 0) to [p.B, p.Hq, p.L, p.S]; InvalidArgument naming `name` when it does not
/// broadcast.
Error set_attention_bias(const TensorRef& bias, const char* name, AttentionParams& p);

/// Plans and launches `p` on `device`'s current stream (asynchronous), with
/// any split-KV workspace from the caching allocator.
Error run_attention(const AttentionParams& p, int device);

}  // namespace kiln::cudadev
