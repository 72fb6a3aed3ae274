// A program importer turns a file in another package format (a PyTorch .pt2)
// into a Kiln program in memory, so Module (and everything built on it: the C
// API, Python, `kiln run`) loads such a file directly. A Runtime holds the
// importers its build has (Runtime::State::open_program tries them); they live
// with the backend that understands the format.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "kiln/error.h"
#include "kiln/program_file.h"

namespace kiln {

struct ProgramImporter {
  const char* format;  ///< for messages: "PyTorch .pt2 package"
  /// Whether a file starting with `head` (up to 8 bytes) is in this format.
  bool (*recognizes)(std::span<const uint8_t> head);
  Result<std::shared_ptr<const ProgramFile>> (*import)(const std::string& path);
};

}  // namespace kiln
