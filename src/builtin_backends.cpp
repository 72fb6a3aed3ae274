// The one explicit list of execution backends compiled into this build, and
// of the foreign package formats they import (a PyTorch .pt2 package is
// converted into a program running on the aoti backend).
#include "aoti/aoti_backend.h"
#include "aoti/pt2_import.h"
#include "program/zip_archive.h"
#include "runtime/backend.h"
#include "runtime/program_importer.h"

namespace kiln {
namespace {
const ProgramImporter kPt2Importer{
    "PyTorch .pt2 package",
    [](std::span<const uint8_t> head) { return ZipArchive::has_zip_magic(head); },
    [](const std::string& path) { return aoti::load_pt2_program(path); },
};
}  // namespace

void register_builtin_backends() {
  register_backend(&aoti::AotiBackend::instance());
  register_program_importer(&kPt2Importer);
}

}  // namespace kiln
