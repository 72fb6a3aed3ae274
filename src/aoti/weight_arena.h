// Layout of one weight arena: where each constant placed by one
// WeightStore::place() call lies inside a single device allocation, and which
// few host->device copies fill it.
//
// Why: one allocation per constant (~300 for a Gemma-like model) costs a pool
// allocation each and hands the upload one region per constant, each ending in
// a short chunk. One arena costs one allocation, and constants that lie back
// to back in the weights blob stay back to back in the arena, so the upload is
// a few large regions (usually one) that copy blob bytes as they are.
//
// Alignment: every constant starts at a multiple of kWeightAlignment (256
// bytes) from the arena base. AOTInductor's own loader packs constants at 64
// bytes, Triton specialises pointer arguments on 16-byte divisibility, and
// cuBLASLt chooses algorithms by operand alignment up to 256 bytes (what a
// separate CUDA allocation gives, and what the CUDA mm shim (src/shims/cuda/mm.cpp) asks for): 256 keeps
// every kernel on the paths it had with one allocation per constant.
//
// Waste: a constant breaks the run only when its blob offset is not 256-aligned
// relative to the run (or lies far from the previous one); then at most 255
// bytes of padding go before it. So the arena exceeds the constants' bytes by
// less than 256 bytes per constant (< 77 KB for 300 constants).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::aoti {

inline constexpr uint64_t kWeightAlignment = 256;

/// One constant to place: its bytes in the weights blob.
struct ArenaSlot {
  uint64_t blob_offset = 0;
  uint64_t nbytes = 0;
};

/// One host->device copy: `nbytes` from blob_offset to arena_offset.
struct ArenaCopy {
  uint64_t arena_offset = 0;
  uint64_t blob_offset = 0;
  uint64_t nbytes = 0;
};

struct ArenaLayout {
  std::vector<uint64_t> offsets;  // per slot, in the order given: its start in the arena
  uint64_t size = 0;              // bytes the arena needs (0 when every slot is empty)
  std::vector<ArenaCopy> copies;  // disjoint, ascending; adjacent copies are merged
};

/// Lays `slots` out in one arena. Slots are taken in blob order; a slot that
/// starts where the previous one ended (or within a few padding bytes of it,
/// when that keeps it aligned) extends the current copy. Empty slots get an
/// aligned offset and no copy. Overlapping slots each get their own bytes.
ArenaLayout plan_weight_arena(std::span<const ArenaSlot> slots);

}  // namespace kiln::aoti
