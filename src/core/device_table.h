// The devices tensors of this process may live on: the host always
// (cpu_device.h); another device once it is loaded (the CUDA plugin publishes
// itself when a Runtime first needs it). Tensor allocation and copies look
// devices up here, since a tensor outlives the module and runtime that made it.
// Thread-safe.
#pragma once

#include "core/device_interface.h"

namespace kiln {

/// The device of `type`, or nullptr while none is loaded.
KILN_API DeviceInterface* device_for(DeviceType type) noexcept;

/// Makes `device` the process's device of its type. Devices are static
/// objects: never unpublished, never freed.
KILN_API void publish_device(DeviceInterface* device) noexcept;

}  // namespace kiln
