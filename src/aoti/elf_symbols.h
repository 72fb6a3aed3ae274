// Reads the undefined dynamic symbols of an ELF64 shared library held in
// memory, without loading it. Used to list the aoti_torch_* shims a model
// library imports so that missing ones are reported together, by name, before
// dlopen — instead of a crash on first call or one dlerror at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/error.h"

namespace kiln::aoti {

struct DynamicSymbols {
  /// Names of the undefined symbols in .dynsym.
  std::vector<std::string> undefined;
  /// File offset of each undefined name in .dynstr, parallel to `undefined`
  /// (the loader rewrites shim import names in its private copy).
  std::vector<uint64_t> undefined_name_offsets;
  /// File offsets of the st_info byte of every STB_GNU_UNIQUE definition.
  /// glibc makes a library with such symbols impossible to unload (dlclose
  /// becomes a no-op), so the loader rebinds them as STB_GLOBAL in its private
  /// copy: a model library is loaded RTLD_LOCAL and needs no cross-library
  /// uniqueness, and unloading must really free it.
  std::vector<uint64_t> unique_binding_offsets;
  /// DT_NEEDED entries (libstdc++.so.6, libgomp.so.1, libcuda.so.1, ...).
  std::vector<std::string> needed;
};

/// Parses .dynsym. InvalidProgram if the bytes are not a well-formed
/// little-endian ELF64 file (every offset is bounds-checked: the bytes come
/// from a program file).
Result<DynamicSymbols> read_dynamic_symbols(std::span<const uint8_t> elf);

}  // namespace kiln::aoti
