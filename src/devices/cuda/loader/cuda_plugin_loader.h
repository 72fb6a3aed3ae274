// Part of libkiln (not of the plugin): finds and loads libkiln_cuda.so when
// Kiln was built with CUDA. Free of CUDA headers and libraries, so libkiln
// runs on machines without any CUDA library installed.
#pragma once

#include <string>

#include "core/device_interface.h"

namespace kiln::cuda_plugin {

/// The CUDA device, loading the plugin on the first call of the process: from
/// setting cuda_plugin (a path) or else next to the shared libkiln itself,
/// dlopen'ed RTLD_NOW | RTLD_GLOBAL (so model libraries resolve the CUDA shims
/// and the CUDA runtime symbols they leave undefined). The device is published
/// to the process (core/device_table.h). When the plugin, the CUDA runtime or
/// a GPU is missing, or the environment disables CUDA (KILN_DISABLE_CUDA),
/// returns nullptr with the reason in `*unavailable` (also logged at Info).
/// Every later call returns the first one's outcome. Thread-safe.
DeviceInterface* load(std::string* unavailable) noexcept;

}  // namespace kiln::cuda_plugin
