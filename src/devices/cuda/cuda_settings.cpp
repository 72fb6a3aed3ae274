#include "devices/cuda/cuda_settings.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace kiln::cudadev {
namespace {

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

}  // namespace kiln::cudadev
