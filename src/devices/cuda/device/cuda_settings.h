// The settings the CUDA ops read on every call (docs/settings.md).
#pragma once

#include "core/settings.h"

namespace kiln::cudadev {

/// Whether float32 GEMMs and convolutions may use TF32 tensor cores (setting
/// cuda_allow_tf32; a lock-free read).
inline bool allow_tf32() noexcept { return process_settings().get_bool(SettingId::CudaAllowTf32); }

}  // namespace kiln::cudadev
