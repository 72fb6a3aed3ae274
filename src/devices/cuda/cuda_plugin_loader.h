// Part of libkiln (not of the plugin): finds and loads libkiln_cuda.so when
// Kiln was built with CUDA. Free of CUDA headers and libraries, so libkiln
// runs on machines without any CUDA library installed.
#pragma once

namespace kiln::cuda_plugin {

/// Called once from register_builtin_devices(). Looks for the plugin in
/// $KILN_CUDA_PLUGIN (a path) or else next to the shared libkiln itself,
/// dlopens it RTLD_NOW | RTLD_GLOBAL (so model libraries resolve the CUDA
/// shims and the CUDA runtime symbols they leave undefined), and calls its
/// kiln_cuda_register(). Never fails loudly: when the plugin, the CUDA runtime
/// or a GPU is missing, or KILN_DISABLE_CUDA=1, it logs why at Info level and
/// the CUDA device stays unregistered.
void load_and_register() noexcept;

}  // namespace kiln::cuda_plugin
