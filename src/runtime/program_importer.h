// Program importers: turn a file in another package format (a PyTorch .pt2)
// into a Kiln program in memory, so Module (and everything built on it: the C
// API, Python, `kiln run`) loads such a file directly. The runtime layer only
// keeps the registry; the importers live in the backends that understand the
// format and are registered with the built-in backends (builtin_backends.cpp).
// Thread-safe: registration happens once, before the first lookup.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/program_file.h"

namespace kiln {

struct ProgramImporter {
  const char* format;  ///< for messages: "PyTorch .pt2 package"
  /// Whether a file starting with `head` (up to 8 bytes) is in this format.
  bool (*recognizes)(std::span<const uint8_t> head);
  Result<std::shared_ptr<const ProgramFile>> (*import)(const std::string& path);
};

/// Adds an importer (the pointer must outlive the process: a static object).
void register_program_importer(const ProgramImporter* importer);

/// A `.kiln` program, or a file an importer recognises by its first bytes,
/// converted. InvalidArgument if `data_files` are given for an imported file.
Result<std::shared_ptr<const ProgramFile>> open_program(const std::string& path,
                                                        const std::vector<std::string>& data_files);

}  // namespace kiln
