#include "devices/cuda/cuda_settings.h"

#include <atomic>
#include <cstdlib>
#include <optional>
#include <strings.h>

namespace kiln::cudadev {
namespace {

// A switch in the environment: true for 1/true/on/yes, false for
// 0/false/off/no (any case), nullopt when unset or anything else.
std::optional<bool> env_switch(const char* name) noexcept {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  const auto is = [v](const char* word) { return strcasecmp(v, word) == 0; };
  if (is("1") || is("true") || is("on") || is("yes")) return true;
  if (is("0") || is("false") || is("off") || is("no")) return false;
  return std::nullopt;
}

// Off by default: on only when switched on.
bool env_allows_tf32() noexcept { return env_switch("KILN_CUDA_ALLOW_TF32") == true; }

// On by default: off only when switched off.
bool env_not_off(const char* name) noexcept { return env_switch(name) != false; }

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
