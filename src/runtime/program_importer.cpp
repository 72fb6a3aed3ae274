#include "runtime/program_importer.h"

#include <algorithm>

#include "program/regular_file.h"
#include "runtime/backend.h"

namespace kiln {
namespace {
std::vector<const ProgramImporter*>& importers() {
  static std::vector<const ProgramImporter*> list;
  return list;
}
}  // namespace

void register_program_importer(const ProgramImporter* importer) { importers().push_back(importer); }

Result<std::shared_ptr<const ProgramFile>> open_program(const std::string& path,
                                                        const std::vector<std::string>& data_files) {
  // Opened without blocking and type-checked first: a FIFO or a device given
  // as the program is an error naming it, never a hang.
  KILN_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path, "program file"));
  uint8_t head[8] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(file.size(), sizeof(head)));
  KILN_RETURN_IF_ERROR(file.read_exact(0, {head, n}));
  // Importers register with the built-in backends, on first use of that registry.
  (void)backend_names();
  for (const ProgramImporter* importer : importers()) {
    if (!importer->recognizes(std::span<const uint8_t>(head, n))) continue;
    if (!data_files.empty())
      return set_error(Error::InvalidArgument, "'" + path + "' is a " + importer->format +
                                                   ", which takes no external data files");
    return importer->import(path);
  }
  return ProgramFile::open(path, data_files);
}

}  // namespace kiln
