// What every cuBLASLt product of the CUDA ops (matmul.cpp, int_mm.cpp,
// scaled_mm.cpp) does alike: own its descriptors, and ask the heuristic for
// an algorithm under the workspace cap and the operands' alignments. Each
// caller builds its own descriptors and reads the heuristic's status its own
// way (which statuses mean "another path computes this").
#pragma once

#include <cstdint>

#include "devices/cuda/libraries/cublaslt_api.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// A product's cuBLASLt descriptors, destroyed with it. `c` stays null where
/// C is laid out as D.
struct LtResources {
  const CublasLtApi* api = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtResources() = default;
  LtResources(const LtResources&) = delete;
  LtResources& operator=(const LtResources&) = delete;
  ~LtResources();
};

/// The heuristic's answer as cuBLASLt gave it: its status, whether it
/// returned an algorithm, and the algorithm.
struct LtHeuristic {
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  int returned = 0;
  cublasLtMatmulHeuristicResult_t result{};
};

/// Asks the heuristic for one algorithm for r's problem, with at most 32 MiB
/// of workspace and the operands' byte alignments (C's taken as D's); fills
/// r.pref. Only failures to set the preferences are errors.
Result<LtHeuristic> lt_ask_heuristic(cublasLtHandle_t handle, LtResources& r, uint32_t align_a, uint32_t align_b,
                                     uint32_t align_d);

}  // namespace kiln::cudadev
