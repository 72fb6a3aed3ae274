// The tensor-core attention kernel (forward only, FlashAttention-2 style) for
// float16 / bfloat16 inputs with head dim 64, 128 or 256 on sm_80 and newer.
//
// Same semantics as the kernels in attention_kernel.h (causal upper-left
// masking, additive or boolean bias broadcast through strides, grouped-query
// heads, scale, fully masked rows giving zeros and a logsumexp of -inf, and
// like the tiled kernel the per-batch spans of packed batches, bottom-right
// alignment, sliding windows and lse layout options); it
// only narrows what it accepts (see mma_attention_unsupported), and
// plan_attention falls back to the scalar tiled kernel for everything else.
//
// Each block owns 64 query rows of one (batch, head); each of its 4 warps owns
// 16 of them (one m16 row block of mma.sync.m16n8k16). Keys and values stream
// through shared memory in 64-key tiles (32-key for head dim 256),
// double-buffered with cp.async, and each warp keeps its scores, softmax state
// and fp32 output accumulator in registers (the online softmax of
// FlashAttention-2: rescale the accumulator when the running row max grows,
// normalise once at the end). Head dims 64 and 128 also keep the warp's Q
// fragments in registers; head dim 256, whose accumulator alone is 128
// registers per thread, re-reads them from shared memory.
#pragma once

#include <cuda_runtime_api.h>

#include "devices/cuda/kernels/attention_kernel.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// Why `params` cannot run on the tensor-core kernel (dtype, head dims,
/// strides, alignment, grid limits), or nullptr when it can. Host arithmetic
/// only; whether the device can run it is mma_attention_available's question.
const char* mma_attention_unsupported(const AttentionParams& params);

/// Whether the tensor-core kernel can run on CUDA device `device`: compute
/// capability 8.0 or newer AND this build holds sm_80+ code for it (a build
/// for "75;90" runs its sm_75 stub on an sm_86 GPU, so the capability alone
/// is not enough). Cached per device after the first query.
Result<bool> mma_attention_available(int device);

/// Launches the tensor-core kernel on `stream` (asynchronous). Fails with
/// InvalidArgument when mma_attention_unsupported(params) names a reason.
Error launch_mma_attention(const AttentionParams& params, cudaStream_t stream);

}  // namespace kiln::cudadev
