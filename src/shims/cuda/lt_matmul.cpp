#include "shims/cuda/lt_matmul.h"

namespace kiln::cudadev {

LtResources::~LtResources() {
  if (pref) api->pref_destroy(pref);
  if (d) api->layout_destroy(d);
  if (c) api->layout_destroy(c);
  if (b) api->layout_destroy(b);
  if (a) api->layout_destroy(a);
  if (desc) api->desc_destroy(desc);
}

Result<LtHeuristic> lt_ask_heuristic(cublasLtHandle_t handle, LtResources& r, uint32_t align_a, uint32_t align_b,
                                     uint32_t align_d) {
  const CublasLtApi& api = *r.api;
  constexpr uint64_t kMaxWorkspace = 32ull << 20;
  KILN_RETURN_IF_ERROR(cublas_status(api, api.pref_create(&r.pref), "cublasLtMatmulPreferenceCreate"));
  KILN_RETURN_IF_ERROR(cublas_status(
      api, api.pref_set(r.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kMaxWorkspace, sizeof(kMaxWorkspace)),
      "workspace preference"));
  const struct {
    cublasLtMatmulPreferenceAttributes_t attr;
    const uint32_t* value;
  } aligns[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d}};
  for (const auto& al : aligns)
    KILN_RETURN_IF_ERROR(
        cublas_status(api, api.pref_set(r.pref, al.attr, al.value, sizeof(uint32_t)), "alignment preference"));
  LtHeuristic h;
  h.status = api.heuristic(handle, r.desc, r.a, r.b, r.c != nullptr ? r.c : r.d, r.d, r.pref, 1, &h.result,
                           &h.returned);
  return h;
}

}  // namespace kiln::cudadev
