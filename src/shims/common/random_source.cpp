#include "shims/common/random_source.h"

#include <random>

#include "shims/common/shim_util.h"

namespace kiln::aoti {

namespace {
thread_local RandomSource* t_current = nullptr;
}  // namespace

uint64_t entropy_seed() noexcept {
  try {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  } catch (...) {
    // No entropy source: a fixed seed is still a valid (if predictable) stream.
    return 0x853c49e6748fea9bULL;
  }
}

RandomSource& current_random_source() noexcept {
  if (t_current != nullptr) return *t_current;
  static RandomSource process_source(entropy_seed());
  return process_source;
}

Error refuse_generator(AtenGeneratorHandle* generator) {
  if (generator != nullptr && *generator != nullptr)
    return invalid(
        "explicit generators are not supported: Kiln's random ops draw from the method's seed (load option "
        "aoti.seed)");
  return Error::Ok;
}

RandomScope::RandomScope(RandomSource* source) noexcept : previous_(t_current) {
  if (source != nullptr) t_current = source;
}

RandomScope::~RandomScope() { t_current = previous_; }

}  // namespace kiln::aoti
