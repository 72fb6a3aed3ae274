#include "kiln/device.h"

#include <charconv>

namespace kiln {

// c10::DeviceType codes, passed through the shim ABI.
static_assert(static_cast<int>(DeviceType::CPU) == 0);
static_assert(static_cast<int>(DeviceType::CUDA) == 1);
static_assert(static_cast<int>(DeviceType::MPS) == 13);

const char* device_type_name(DeviceType type) noexcept {
  switch (type) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::CUDA: return "cuda";
    case DeviceType::MPS: return "mps";
  }
  return "unknown";
}

std::string device_string(Device device) {
  if (device.type == DeviceType::CPU) return "cpu";
  return std::string(device_type_name(device.type)) + ":" + std::to_string(device.index);
}

std::optional<Device> parse_device(std::string_view text) noexcept {
  std::string_view type_part = text;
  std::string_view index_part;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    type_part = text.substr(0, colon);
    index_part = text.substr(colon + 1);
    if (index_part.empty()) return std::nullopt;
  }
  Device device;
  if (type_part == "cpu") device.type = DeviceType::CPU;
  else if (type_part == "cuda") device.type = DeviceType::CUDA;
  else if (type_part == "mps") device.type = DeviceType::MPS;
  else return std::nullopt;
  if (!index_part.empty()) {
    int32_t index = 0;
    auto [end, ec] = std::from_chars(index_part.data(), index_part.data() + index_part.size(), index);
    if (ec != std::errc() || end != index_part.data() + index_part.size() || index < 0) return std::nullopt;
    device.index = index;
  }
  return device;
}

}  // namespace kiln
