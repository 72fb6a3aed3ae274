// Process-wide settings of the CUDA ops. Thread-safe (atomics, or read once).
#pragma once

namespace kiln::cudadev {

/// Whether float32 GEMMs and convolutions may use TF32 tensor cores. Initial
/// value from KILN_CUDA_ALLOW_TF32 (1/true/on/yes), default off.
bool allow_tf32() noexcept;
void set_allow_tf32(bool allow) noexcept;

/// Whether products of at most 4 rows take Kiln's GEMV kernel; off with
/// KILN_CUDA_GEMV=0/false/off/no (to compare with cuBLASLt). Read once.
bool gemv_enabled() noexcept;

/// Whether convolutions run cached cuDNN execution plans; off with
/// KILN_CUDNN_PLANS=0/false/off/no (cuDNN's legacy API, to compare). Read once.
bool cudnn_plans_enabled() noexcept;

}  // namespace kiln::cudadev
