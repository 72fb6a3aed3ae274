// Process-wide numerical settings of the CUDA ops. Thread-safe (atomics).
#pragma once

namespace kiln::cudadev {

/// Whether float32 GEMMs and convolutions may use TF32 tensor cores. Initial
/// value from KILN_CUDA_ALLOW_TF32 (1/true/on/yes), default off.
bool allow_tf32() noexcept;
void set_allow_tf32(bool allow) noexcept;

}  // namespace kiln::cudadev
