#include <array>
#include <mutex>
#include <string>

#include "kiln/device_interface.h"

namespace kiln {
namespace {
// Indexed by DeviceType code; c10 codes are small.
constexpr size_t kMaxDeviceTypes = 32;
std::array<DeviceInterface*, kMaxDeviceTypes>& registry() {
  static std::array<DeviceInterface*, kMaxDeviceTypes> slots{};
  return slots;
}
}  // namespace

Error DeviceInterface::copy_strided(void*, const int64_t*, const void*, const int64_t*, const int64_t*, int64_t,
                                    size_t, int, StreamHandle) {
  return set_error(Error::NotSupported,
                   std::string("strided copies on ") + device_type_name(type()) + " are not supported");
}

void register_device_interface(DeviceInterface* device) {
  auto code = static_cast<size_t>(device->type());
  if (code < kMaxDeviceTypes) registry()[code] = device;
}

DeviceInterface* get_device_interface(DeviceType type) {
  static std::once_flag once;
  std::call_once(once, register_builtin_devices);
  auto code = static_cast<size_t>(type);
  return code < kMaxDeviceTypes ? registry()[code] : nullptr;
}

}  // namespace kiln
