// The one explicit list of device backends compiled into this build.
#include "devices/cpu/cpu_device.h"
#include "kiln/device_interface.h"
#ifdef KILN_WITH_CUDA
#include "devices/cuda/cuda_plugin_loader.h"
#endif

namespace kiln {

void register_builtin_devices() {
  register_device_interface(&CpuDevice::instance());
#ifdef KILN_WITH_CUDA
  // The CUDA device lives in libkiln_cuda.so so that libkiln itself needs no
  // CUDA library; when the plugin, the CUDA runtime or a GPU is missing the
  // device is simply not registered (logged at Info).
  cuda_plugin::load_and_register();
#endif
}

}  // namespace kiln
