// The one explicit list of device backends compiled into this build.
#include "devices/cpu/cpu_device.h"
#include "kiln/device_interface.h"

namespace kiln {

void register_builtin_devices() {
  register_device_interface(&CpuDevice::instance());
  // CUDA registers here once src/devices/cuda exists (KILN_WITH_CUDA).
}

}  // namespace kiln
