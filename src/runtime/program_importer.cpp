#include "runtime/program_importer.h"

#include <cstdio>

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
  uint8_t head[8] = {};
  size_t n = 0;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    n = std::fread(head, 1, sizeof(head), f);
    std::fclose(f);
  }
  // Importers register with the built-in backends, on first use of that registry.
  (void)backend_names();
  for (const ProgramImporter* importer : importers()) {
    if (!importer->recognizes(std::span<const uint8_t>(head, n))) continue;
    if (!data_files.empty())
      return set_error(Error::InvalidArgument, "'" + path + "' is a " + importer->format +
                                                   ", which takes no external data files");
    return importer->import(path);
  }
  // Unreadable files and real programs alike: ProgramFile names the problem.
  return ProgramFile::open(path, data_files);
}

}  // namespace kiln
