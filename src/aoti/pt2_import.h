// Converts a PyTorch `.pt2` package made by
// torch._inductor.aoti_compile_and_package into a Kiln program: one method
// running one of the package's AOTInductor models, with the model's compiled
// library, its weights blob (when the weights are not inside the library) and
// its metadata (device, CPU ISA, machine, compute capability), which the
// runtime checks against the host at load. CUDA kernels stored beside the
// library (embed_kernel_binary=False) become named data the runtime writes to
// a kernel directory at load (kernel_directory.h). The input contract is read
// from the generated wrapper source the package holds (wrapper_contract.h),
// and so are the output specs where the source allows. Layout and limits:
// docs/pt2-import.md.
//
// Refused, with a message saying what to do: libraries linked against libtorch
// (aot_inductor.link_libtorch=True, torch's default), weights pickled per
// tensor (package_constants_on_disk_format="pickle_weights"), source-only
// packages (package_cpp_only) and compressed archives.
#pragma once

#include <memory>
#include <string>

#include "kiln/error.h"
#include "kiln/program_file.h"
#include "program/program_writer.h"
#include "program/zip_archive.h"

namespace kiln::aoti {

/// Method metadata listing the outputs whose specs are placeholders
/// (comma-separated indices; absent when every output spec was inferred).
inline constexpr const char* kUnknownOutputsKey = "unknown_outputs";

struct Pt2ImportOptions {
  /// Which model of the package ("" = the only one; a package made by
  /// aoti_compile_and_package from one ExportedProgram holds "model").
  std::string model_name;
  /// Name of the Kiln method that runs it.
  std::string method_name = "forward";
};

/// Adds the method, its named data and program metadata to `writer`.
/// InvalidProgram for a package that is not an AOTInductor .pt2 or is
/// malformed, NotSupported for one Kiln cannot run (see above), NotFound for
/// an unknown model name; the message names the package entry.
Error import_pt2(const ZipArchive& package, const Pt2ImportOptions& options, ProgramWriter* writer);

/// Opens a .pt2 package and converts it in memory into a validated program
/// (the library and weights are copied: peak memory about three times their size).
Result<std::shared_ptr<const ProgramFile>> load_pt2_program(const std::string& path,
                                                            const Pt2ImportOptions& options = {});

}  // namespace kiln::aoti
