// ProgramWriter: builds a `.kiln` program file (and optionally its external
// data file) from MethodInfo records and named byte blobs. Used by C++ tests
// and tools; the exporter has its own pure-Python writer of the same format
// (python/kiln/program.py). Layout: docs/program-format.md.
//
// Ownership: add_named_data copies the bytes. Not thread-safe; one writer per
// thread.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/program_file.h"

namespace kiln {

class ProgramWriter {
 public:
  /// Adds a method. InvalidArgument if the name is empty or already added, or
  /// an input/output dtype is unknown. Keys are checked at write().
  Error add_method(const MethodInfo& method);

  /// Adds a named blob. `alignment` is a power of two <= 4096 (weights named
  /// by a method's weights_key are raised to 4096 at write()). `external`
  /// puts it in the external data file. Adding an existing key with identical
  /// bytes and placement is a no-op; different bytes give InvalidArgument.
  Error add_named_data(const std::string& key, std::span<const uint8_t> bytes, uint64_t alignment = 64,
                       bool external = false);

  /// Sets a program-level metadata entry (replaces an existing value).
  void set_metadata(const std::string& key, const std::string& value);

  /// Writes the program to `path`. External entries go to `external_path`
  /// (default: path + ".data"); the program records only its basename, and
  /// no data file is written when there are no external entries.
  /// Each file is replaced atomically (src/program/atomic_file.h): a process
  /// that has the old file open or mapped keeps its bytes, and a failed write
  /// leaves the old files as they were and no temporary file behind.
  /// InvalidArgument for a method key naming no entry; IoError on write failure.
  Error write(const std::string& path, const std::string& external_path = "") const;

  /// The program file bytes alone (for tests / from_bytes); InvalidArgument
  /// if any entry is external (there is no file to record).
  Result<std::vector<uint8_t>> to_bytes() const;

 private:
  struct Entry {
    std::string key;
    std::vector<uint8_t> bytes;
    uint64_t alignment = 64;
    bool external = false;
  };
  Error build(const std::string& external_name, std::vector<uint8_t>* program,
              std::vector<uint8_t>* data) const;

  std::vector<MethodInfo> methods_;
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace kiln
