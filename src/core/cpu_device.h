// CPU device: 64-byte aligned host memory with an optional byte limit (so
// out-of-memory paths can be tested), large blocks reused through the process's
// LargeBlockCache, plain memcpy copies, no streams. Part of core: every tensor
// can live in host memory, whatever devices a runtime loads.
#pragma once

#include <atomic>
#include <cstddef>

#include "core/device_interface.h"

namespace kiln {

class CpuDevice final : public DeviceInterface {
 public:
  DeviceType type() const noexcept override { return DeviceType::CPU; }
  int device_count() const noexcept override { return 1; }
  Result<void*> allocate(size_t nbytes, int index, StreamHandle stream) override;
  void free(void* ptr, int index, StreamHandle stream) noexcept override;
  Error copy(void* dst, const void* src, size_t nbytes, CopyKind kind, int index, StreamHandle stream) override;
  Error synchronize(int index, StreamHandle stream) override { return Error::Ok; }

  /// Caps live allocations at `bytes` (0 = unlimited). Allocations past the cap
  /// fail with OutOfMemory. Process-wide.
  void set_limit(size_t bytes) noexcept { limit_.store(bytes); }
  size_t bytes_in_use() const noexcept { return in_use_.load(); }
  size_t peak_bytes() const noexcept { return peak_.load(); }

  static CpuDevice& instance();

 private:
  std::atomic<size_t> limit_{0};
  std::atomic<size_t> in_use_{0};
  std::atomic<size_t> peak_{0};
};

}  // namespace kiln
