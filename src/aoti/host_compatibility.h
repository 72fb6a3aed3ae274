// Refuses, before dlopen, a model library this machine cannot run: one built
// for CPU instructions the processor lacks (AOTInductor compiles with
// -march=native and ISA flags of the export machine, so such a library would
// die with SIGILL mid-run), for another architecture, or against a newer glibc
// than the one present (dlopen would fail with a versioned-symbol error that
// does not say what to do).
#pragma once

#include "kiln/error.h"
#include "kiln/program_file.h"

namespace kiln::aoti {

/// Ok, or NotSupported naming what the library needs and what the host has.
/// Reads the method metadata the exporter records (cpu_isa, AOTI_MACHINE,
/// glibc_required); methods without that metadata pass.
Error check_host_compatibility(const MethodInfo& method);

}  // namespace kiln::aoti
