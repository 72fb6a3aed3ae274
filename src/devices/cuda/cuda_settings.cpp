#include "devices/cuda/cuda_settings.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace kiln::cudadev {
namespace {

// An on-by-default switch: off only when `name` is 0, false, off or no.
bool env_not_off(const char* name) noexcept {
  const char* v = std::getenv(name);
  return v == nullptr || !(std::strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 ||
                           strcasecmp(v, "off") == 0 || strcasecmp(v, "no") == 0);
}

bool env_allows_tf32() noexcept {
  const char* v = std::getenv("KILN_CUDA_ALLOW_TF32");
  if (v == nullptr) return false;
  return std::strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "on") == 0 ||
         strcasecmp(v, "yes") == 0;
}

std::atomic<bool>& flag() noexcept {
  static std::atomic<bool> value{env_allows_tf32()};
  return value;
}

}  // namespace

bool allow_tf32() noexcept { return flag().load(std::memory_order_relaxed); }
void set_allow_tf32(bool allow) noexcept { flag().store(allow, std::memory_order_relaxed); }

bool gemv_enabled() noexcept {
  static const bool enabled = env_not_off("KILN_CUDA_GEMV");
  return enabled;
}

bool cudnn_plans_enabled() noexcept {
  static const bool enabled = env_not_off("KILN_CUDNN_PLANS");
  return enabled;
}

}  // namespace kiln::cudadev
