#include "aoti/weight_arena.h"

#include <algorithm>
#include <numeric>

namespace kiln::aoti {
namespace {

uint64_t align_up(uint64_t v) { return (v + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment; }

}  // namespace

ArenaLayout plan_weight_arena(std::span<const ArenaSlot> slots) {
  ArenaLayout layout;
  layout.offsets.assign(slots.size(), 0);
  // Blob order, so that neighbours in the blob are neighbours here whatever
  // order the caller lists them in (ties keep the caller's order).
  std::vector<size_t> order(slots.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return slots[a].blob_offset < slots[b].blob_offset; });
  uint64_t cursor = 0;         // end of the last placed bytes in the arena
  uint64_t prev_blob_end = 0;  // end of the last placed bytes in the blob
  for (size_t i : order) {
    const ArenaSlot& s = slots[i];
    // Nothing to read or copy: the base is a valid, aligned address.
    if (s.nbytes == 0) continue;
    uint64_t offset = 0;
    const bool after_previous = !layout.copies.empty() && s.blob_offset >= prev_blob_end;
    const uint64_t gap = after_previous ? s.blob_offset - prev_blob_end : 0;
    if (after_previous && gap < kWeightAlignment && (cursor + gap) % kWeightAlignment == 0) {
      // Same run: mirror the blob, padding bytes included (fewer than the
      // alignment, and copying them is cheaper than starting a new copy).
      offset = cursor + gap;
      layout.copies.back().nbytes += gap + s.nbytes;
    } else {
      offset = align_up(cursor);
      layout.copies.push_back(ArenaCopy{offset, s.blob_offset, s.nbytes});
    }
    layout.offsets[i] = offset;
    cursor = offset + s.nbytes;
    prev_blob_end = s.blob_offset + s.nbytes;
  }
  layout.size = cursor;
  return layout;
}

}  // namespace kiln::aoti
