// Importing PyTorch `.pt2` packages (made by
// torch._inductor.aoti_compile_and_package with aot_inductor.link_libtorch
// False) as Kiln programs. Module loads a .pt2 path directly (converting it in
// memory); this writes the converted program to disk once, so later loads map
// it without conversion. What is imported, and what is refused:
// docs/pt2-import.md.
#pragma once

#include <string>

#include "kiln/error.h"
#include "kiln/export.h"

namespace kiln {

/// Converts the package at `package_path` into the program file
/// `program_path`. `model_name` picks one model of the package ("" = the only
/// one); `method_name` names the method that runs it. InvalidProgram for a
/// corrupt package, NotSupported for one Kiln cannot run (the message says how
/// to re-export it), NotFound / IoError for files.
KILN_API Error import_pt2_package(const std::string& package_path, const std::string& program_path,
                                  const std::string& model_name = "", const std::string& method_name = "forward");

}  // namespace kiln
