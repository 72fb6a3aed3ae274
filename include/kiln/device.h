// Where a tensor's memory lives. DeviceType values are c10::DeviceType codes
// (pinned in src/core/device.cpp) because they cross the aoti_torch_* ABI.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/export.h"

namespace kiln {

enum class DeviceType : int32_t {
  CPU = 0,
  CUDA = 1,
  MPS = 13,
};

struct Device {
  DeviceType type = DeviceType::CPU;
  int32_t index = 0;

  bool is_cpu() const noexcept { return type == DeviceType::CPU; }
  bool operator==(const Device&) const = default;
};

/// "cpu", "cuda:0", "mps:0".
KILN_API std::string device_string(Device device);

/// Parses "cpu", "cuda", "cuda:1", "mps"; std::nullopt if malformed.
KILN_API std::optional<Device> parse_device(std::string_view text) noexcept;

/// "cpu", "cuda", "mps" (no index), or "unknown".
KILN_API const char* device_type_name(DeviceType type) noexcept;

}  // namespace kiln
