// StreamBlockCache: device blocks a run freed, kept for the same stream's next
// run so that it allocates its intermediates without any CUDA call.
//
// A model allocates and frees the same intermediates on every run; through the
// stream-ordered pool each of those is a cudaMallocFromPoolAsync and a
// cudaFreeAsync (about 1-2 us of host time each, 130 a call for a Whisper
// decoder step). A block freed on stream S may be handed to the next
// allocation on S at once: stream order puts every kernel that used it before
// every kernel that will. Blocks are matched by exact size (runs repeat their
// sizes), and bounded by count per size and bytes per device, past which the
// caller frees them normally.
//
// Pure bookkeeping: no CUDA calls, not thread-safe (CudaDevice holds its lock
// around every call). The caller frees what the drain_* calls hand back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace kiln::cudadev {

class StreamBlockCache {
 public:
  struct Entry {
    void* ptr;
    int device;
    void* stream;
    size_t nbytes;
  };

  StreamBlockCache(uint64_t max_bytes_per_device, size_t max_blocks_per_size)
      : max_bytes_(max_bytes_per_device), max_per_size_(max_blocks_per_size) {}

  /// A kept block of exactly `nbytes` freed on `stream`, or nullptr.
  void* take(int device, void* stream, size_t nbytes) {
    auto it = blocks_.find({device, stream, nbytes});
    if (it == blocks_.end() || it->second.empty()) return nullptr;
    void* ptr = it->second.back();
    it->second.pop_back();
    if (it->second.empty()) blocks_.erase(it);
    bytes_[device] -= nbytes;
    return ptr;
  }

  /// Keeps `ptr` for `stream`; false when that would pass a limit (then the
  /// caller frees it).
  bool keep(int device, void* stream, void* ptr, size_t nbytes) {
    uint64_t& total = bytes_[device];
    if (total + nbytes > max_bytes_) return false;
    std::vector<void*>& list = blocks_[{device, stream, nbytes}];
    if (list.size() >= max_per_size_) return false;
    list.push_back(ptr);
    total += nbytes;
    return true;
  }

  /// Removes and returns every block kept for `stream` (before it is destroyed).
  std::vector<Entry> drain_stream(void* stream) {
    return drain([stream](const Key& k) { return std::get<1>(k) == stream; });
  }

  /// Removes and returns every block of `device` (to trim, or to retry an
  /// allocation that ran out of memory).
  std::vector<Entry> drain_device(int device) {
    return drain([device](const Key& k) { return std::get<0>(k) == device; });
  }

  uint64_t bytes(int device) const {
    auto it = bytes_.find(device);
    return it == bytes_.end() ? 0 : it->second;
  }

 private:
  using Key = std::tuple<int, void*, size_t>;  // device, stream, bytes

  template <typename Match>
  std::vector<Entry> drain(Match match) {
    std::vector<Entry> out;
    for (auto it = blocks_.begin(); it != blocks_.end();) {
      if (!match(it->first)) {
        ++it;
        continue;
      }
      const auto& [device, stream, nbytes] = it->first;
      for (void* ptr : it->second) {
        out.push_back({ptr, device, stream, nbytes});
        bytes_[device] -= nbytes;
      }
      it = blocks_.erase(it);
    }
    return out;
  }

  uint64_t max_bytes_;
  size_t max_per_size_;
  std::map<Key, std::vector<void*>> blocks_;
  std::unordered_map<int, uint64_t> bytes_;
};

}  // namespace kiln::cudadev
