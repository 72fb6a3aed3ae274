#include "devices/cpu/packed_weights.h"

#include <new>
#include <string>

#include "core/settings.h"
#include "devices/cpu/packed_gemm.h"

namespace kiln::cpu {

std::shared_ptr<const PackedWeight> packed_weight(const Storage& storage, const float* data, int64_t groups,
                                                  int64_t group_step, int64_t k, int64_t n, int64_t row_stride,
                                                  int64_t col_stride) {
  static const bool enabled = process_settings().get_bool(SettingId::CpuPackWeights);
  if (!enabled || !storage.is_constant() || !packed_gemm_available()) return nullptr;
  // The view's place and geometry name the packing: other views of the same bytes get their own.
  const std::string key = "packed_gemm_panels:" +
                          std::to_string(reinterpret_cast<const char*>(data) -
                                         static_cast<const char*>(storage.data())) +
                          ':' + std::to_string(groups) + 'x' + std::to_string(group_step) + ':' + std::to_string(k) +
                          'x' + std::to_string(n) + ':' + std::to_string(row_stride) + ',' +
                          std::to_string(col_stride);
  std::shared_ptr<const void> made = storage.derived(key, [&]() -> std::shared_ptr<const void> {
    auto packing = std::make_shared<PackedWeight>();
    packing->group_floats = packed_b_floats(k, n);
    try {
      packing->floats.resize(static_cast<size_t>(groups * packing->group_floats));
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
    for (int64_t g = 0; g < groups; ++g)
      pack_b(data + g * group_step, k, n, row_stride, col_stride, packing->floats.data() + g * packing->group_floats);
    return packing;
  });
  return std::static_pointer_cast<const PackedWeight>(made);
}

}  // namespace kiln::cpu
