// Device attributes the fallback ops need on every call, read once per device.
//
// Why: the GEMV and attention planners size their grids by the SM count, and
// cudaDeviceGetAttribute costs 0.3-0.7 us of host time per query; Parakeet's
// encoder asked 50 times a call (H100 profile, fallbacks mode). The values
// cannot change while the process runs.
//
// Thread-safety: any thread; a racing first read queries twice and stores the
// same value.
#pragma once

#include "kiln/error.h"

namespace kiln::cudadev {

/// cudaDevAttrMultiProcessorCount of `device` (a valid index), cached.
Result<int> multiprocessor_count(int device);

}  // namespace kiln::cudadev
