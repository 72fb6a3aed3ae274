#include "core/device_table.h"

#include <array>
#include <atomic>

#include "core/cpu_device.h"

namespace kiln {
namespace {
// Indexed by DeviceType code; c10 codes are small.
constexpr size_t kMaxDeviceTypes = 32;
std::array<std::atomic<DeviceInterface*>, kMaxDeviceTypes>& slots() {
  static std::array<std::atomic<DeviceInterface*>, kMaxDeviceTypes> table{};
  return table;
}
}  // namespace

DeviceInterface* device_for(DeviceType type) noexcept {
  if (type == DeviceType::CPU) return &CpuDevice::instance();
  const auto code = static_cast<size_t>(type);
  return code < kMaxDeviceTypes ? slots()[code].load(std::memory_order_acquire) : nullptr;
}

void publish_device(DeviceInterface* device) noexcept {
  const auto code = static_cast<size_t>(device->type());
  if (code < kMaxDeviceTypes) slots()[code].store(device, std::memory_order_release);
}

}  // namespace kiln
