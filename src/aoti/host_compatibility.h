// Refuses, before dlopen, a model library this machine cannot run: one built
// for CPU instructions the processor lacks (AOTInductor compiles with
// -march=native and ISA flags of the export machine, so such a library would
// die with SIGILL mid-run), for another architecture, or against a newer glibc
// than the one present (dlopen would fail with a versioned-symbol error that
// does not say what to do).
//
// For CUDA methods, check_cuda_compatibility refuses a library whose GPU code
// cannot run on the chosen GPU (the CUDA driver would only fail at the first
// kernel launch, with "no kernel image is available").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/error.h"
#include "kiln/program_file.h"

namespace kiln::aoti {

/// Ok, or NotSupported naming what the library needs and what the host has.
/// Reads the method metadata the exporter records (cpu_isa, AOTI_MACHINE,
/// glibc_required); methods without that metadata pass.
Error check_host_compatibility(const MethodInfo& method);

/// One entry of a method's `cuda_archs` metadata: GPU code for one target.
struct CudaArch {
  int cc = 0;          ///< compute capability, 10 * major + minor (90, 100, 120)
  char variant = 0;    ///< 0, 'a' (arch-specific: sm_90a) or 'f' (family: sm_100f)
  bool ptx = false;    ///< PTX is included (the driver can JIT it for newer GPUs)
};

/// Parses a cuda_archs list: entries separated by ',', ';' or spaces, each
/// "90", "9.0", "sm_90", "90a", "100f", with "+PTX" for machine code plus PTX
/// or a "compute_" prefix for PTX. Case-insensitive. InvalidProgram naming the
/// bad entry otherwise; an empty list is an error too.
Result<std::vector<CudaArch>> parse_cuda_archs(std::string_view text);

/// "sm_90a", "sm_80+PTX".
std::string cuda_arch_name(const CudaArch& arch);

/// Whether code for `arch` runs on a GPU of compute capability `device_cc`.
/// The rule, deliberately conservative:
///  * machine code (SASS) runs only on exactly its compute capability (CUDA
///    would also run plain sm_80 code on sm_86; Kiln does not count on it);
///  * arch-specific code ('a': sm_90a), PTX included, only on exactly that
///    GPU: such PTX cannot be compiled for another one;
///  * family code ('f': sm_100f) on the same major version, same or higher minor;
///  * plain PTX on any GPU of the same or a higher compute capability.
bool cuda_arch_runs_on(const CudaArch& arch, int device_cc);

/// Ok, or NotSupported naming what the library was built for and what
/// `device` (described as `device_name`, e.g. "cuda:0") is: "built for sm_90a,
/// this GPU (cuda:0) is sm_80". Reads method metadata `cuda_archs` (written by
/// Kiln's exporter), else AOTI_COMPUTE_CAPABILITY (AOTInductor's, treated as
/// machine code for exactly that GPU); methods with neither pass.
Error check_cuda_compatibility(const MethodInfo& method, int device_cc, std::string_view device_name);

}  // namespace kiln::aoti
