#include "core/cpu_device.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/large_block_cache.h"
#include "core/settings.h"

namespace kiln {

CpuDevice& CpuDevice::instance() {
  static CpuDevice device;
  return device;
}

Result<void*> CpuDevice::allocate(size_t nbytes, int /*index*/, StreamHandle /*stream*/) {
  constexpr size_t kAlignment = 64;
  const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  const size_t limit = limit_.load();
  const size_t now = in_use_.fetch_add(rounded) + rounded;
  if (limit != 0 && now > limit) {
    in_use_.fetch_sub(rounded);
    return set_error(Error::OutOfMemory, "CPU allocation of " + std::to_string(nbytes) +
                                             " bytes exceeds the configured limit of " + std::to_string(limit) +
                                             " bytes (" + std::to_string(now - rounded) + " in use)");
  }
  // A 64-byte header in front of the block records its size for free().
  // Large blocks come back from the block cache when one of the same size was
  // freed earlier (large_block_cache.h: no page faults on every call).
  const size_t block_bytes = rounded + kAlignment;
  void* base = block_bytes >= LargeBlockCache::kMinBytes ? LargeBlockCache::process().take(block_bytes) : nullptr;
  if (!base) base = std::aligned_alloc(kAlignment, block_bytes);
  if (!base && LargeBlockCache::process().cached_bytes() > 0) {
    LargeBlockCache::process().clear();  // kept blocks are the memory to give back first
    base = std::aligned_alloc(kAlignment, block_bytes);
  }
  if (!base) {
    in_use_.fetch_sub(rounded);
    return set_error(Error::OutOfMemory, "CPU allocation of " + std::to_string(nbytes) + " bytes failed");
  }
  size_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  *static_cast<size_t*>(base) = rounded;
  // Tests set poison_allocations: every block handed out, reused ones
  // included, is filled with 0xFF (NaN in every float format), so an output a
  // kernel forgot to write cannot pass a comparison by accident.
  if (process_settings().get_bool(SettingId::PoisonAllocations)) std::memset(static_cast<char*>(base) + kAlignment, 0xFF, rounded);
  return static_cast<char*>(base) + kAlignment;
}

void CpuDevice::free(void* ptr, int /*index*/, StreamHandle /*stream*/) noexcept {
  if (!ptr) return;
  void* base = static_cast<char*>(ptr) - 64;
  const size_t rounded = *static_cast<size_t*>(base);
  in_use_.fetch_sub(rounded);
  if (LargeBlockCache::process().keep(base, rounded + 64)) return;
  std::free(base);
}

Error CpuDevice::copy(void* dst, const void* src, size_t nbytes, CopyKind /*kind*/, int /*index*/,
                      StreamHandle /*stream*/) {
  if (nbytes) std::memmove(dst, src, nbytes);
  return Error::Ok;
}

}  // namespace kiln
