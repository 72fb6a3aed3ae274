// Reading a blob into private memory and hashing it in the same pass, so the
// digest is of the very copy that is then used (ProgramFile::read_named_data).
//
// Two ways: chunk by chunk on the calling thread (each chunk hashed while it
// is still in the cache), or with the reading (page faults and copying) on a
// second thread that keeps ahead of the hashing, so the hash alone sets the
// pace. Which is faster depends on the machine: on a 16-core H200 host the
// second way checks a 1 GiB blob in 1.00 s against 1.31 s (0.98 s when the
// hash read a file mapping); on a 2-core machine it took 0.44 s against 0.19 s
// for 128 MiB (bench/models/load_time.py). read_hashed picks by size and cores.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "kiln/error.h"
#include "program/sha256.h"

namespace kiln {

/// Fills `out` with the source's bytes from `offset` (a pread of a file).
using ChunkReader = std::function<Error(uint64_t offset, std::span<uint8_t> out)>;

/// Fills `out` from offset 0 of `read`, in chunks, hashing every byte read
/// into `hasher` (when given) in order. The first failing read's error (and
/// message) is returned; `out` is then partly filled.
Error read_hashed(const ChunkReader& read, std::span<uint8_t> out, Sha256* hasher);

/// The two ways read_hashed chooses between, for tests and benchmarks.
Error read_then_hash(const ChunkReader& read, std::span<uint8_t> out, Sha256* hasher);
Error read_ahead_and_hash(const ChunkReader& read, std::span<uint8_t> out, Sha256& hasher);

}  // namespace kiln
