// Kernel modules that model libraries load, unloaded when the library goes.
//
// AOTInductor's CUDA wrapper loads each Triton kernel with cuModuleLoad /
// cuModuleLoadData and never unloads it: the module outlives the library, so
// every load/unload cycle of a method leaked its kernels' device and host
// memory (about 1.3 MiB of GPU memory per cycle for a small MLP). Kiln's
// loader renames those two imports of a model library to knModuleLoad /
// knModuleLoadData (same length, see aoti_library.cpp); these wrappers call
// the driver and record each module under the base address of the library
// that asked (found with dladdr on the return address). When the method goes,
// release_library_modules(base) unloads them, after its containers and CUDA
// graphs are gone and before dlclose.
//
// Thread-safety: the registry is under one mutex; driver calls are made
// outside it.
#pragma once

namespace kiln::cudadev {

/// Unloads every module the library loaded at `library_base` asked for. The
/// caller synchronises the library's device first (queued kernels of it may
/// still run when outputs were kept on the device).
void release_library_modules(const void* library_base) noexcept;

/// Modules currently recorded for `library_base` (tests, diagnostics).
int library_module_count(const void* library_base) noexcept;

}  // namespace kiln::cudadev
