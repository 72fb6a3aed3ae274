#include "aoti/device_weights.h"

#include <chrono>
#include <cstdio>
#include <tuple>

#include "aoti/weak_registry.h"
#include "aoti/weight_arena.h"
#include "core/device_table.h"
#include "kiln/log.h"

namespace kiln::aoti {

Result<std::shared_ptr<WeightStore>> WeightStore::for_program(const std::shared_ptr<const ProgramFile>& program,
                                                              Device device) {
  using Key = std::tuple<const void*, int, int>;
  static auto* registry = new WeakRegistry<Key, WeightStore>();  // never destroyed: used until exit
  // A live entry holds its program, so a program's address is never mistaken
  // for another's.
  return registry->get_or_create(Key{program.get(), static_cast<int>(device.type), device.index}, [&] {
    return Result<std::shared_ptr<WeightStore>>(std::make_shared<WeightStore>(program, device));
  });
}

std::string WeightStore::share_key(const ConstantEntry& e) {
  if (e.original_fqn.empty() || e.sha256.empty()) return "";
  std::string key = e.original_fqn + '|' + e.sha256 + '|' + dtype_name(e.dtype) + '|' +
                    std::to_string(e.storage_offset) + '|' + std::to_string(e.data_size) + '|';
  for (int64_t s : e.sizes) key += std::to_string(s) + ',';
  key += '|';
  for (int64_t s : e.strides) key += std::to_string(s) + ',';
  return key;
}

Result<std::vector<Tensor>> WeightStore::place(const std::vector<ConstantEntry>& entries,
                                               const WeightsSource& blob) {
  DeviceInterface* iface = iface_ ? iface_ : device_for(device_.type);
  if (!iface) return set_error(Error::NotSupported, "no device interface for " + device_string(device_));
  std::lock_guard<std::mutex> lock(mutex_);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::vector<Tensor> out(entries.size());
  std::vector<size_t> owned;  // entries that get memory of their own, in the arena
  std::vector<std::pair<size_t, std::string>> new_shared;  // entry index, key
  for (size_t i = 0; i < entries.size(); ++i) {
    const ConstantEntry& e = entries[i];
    const std::string key = share_key(e);
    if (!key.empty())
      if (auto it = shared_.find(key); it != shared_.end()) {
        out[i] = it->second;
        continue;
      }
    if (device_.is_cpu() && e.read_only()) {
      if (!blob.has_bytes())
        return set_error(Error::Internal, "CPU weights are views of the blob, which was not read into memory");
      // A view of the private blob, which the view's storage keeps alive.
      const uint8_t* src = blob.bytes.data() + e.blob_offset;
      StoragePtr storage = Storage::create(const_cast<uint8_t*>(src), e.data_size, device_,
                                           [owner = blob.bytes.owner()](void*) {});
      storage->mark_constant();  // kernels may keep these weights packed (packed_gemm.h)
      out[i] = Tensor(std::move(storage), e.dtype, e.sizes, e.strides, e.storage_offset);
    } else {
      owned.push_back(i);
    }
    if (!key.empty()) new_shared.emplace_back(i, key);
  }
  if (owned.empty()) {
    for (const auto& [i, key] : new_shared) shared_.emplace(key, out[i]);
    return out;
  }

  std::vector<ArenaSlot> slots;
  slots.reserve(owned.size());
  for (size_t i : owned) slots.push_back(ArenaSlot{entries[i].blob_offset, entries[i].data_size});
  const ArenaLayout layout = plan_weight_arena(slots);
  // allocate_long_lived() promises 64-byte alignment; the few bytes more let the base be
  // rounded up to kWeightAlignment whatever the allocator gives.
  constexpr uint64_t kAllocatorAlignment = 64;
  const size_t arena_bytes = static_cast<size_t>(layout.size + kWeightAlignment - kAllocatorAlignment);
  const int index = device_.index;
  auto data = iface->allocate_long_lived(arena_bytes, index);
  if (!data.ok())
    return set_error(data.error(), "allocating " + std::to_string(arena_bytes) + " bytes on " +
                                       device_string(device_) + " for " + std::to_string(owned.size()) +
                                       " weights (first: '" + entries[owned.front()].name +
                                       "'): " + last_error_message());
  // Shared by the storages of the arena's tensors: freed with the last one.
  std::shared_ptr<void> arena(*data, [iface, index](void* p) { iface->free(p, index, nullptr); });
  const uintptr_t raw = reinterpret_cast<uintptr_t>(*data);
  uint8_t* base = reinterpret_cast<uint8_t*>((raw + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment);
  for (size_t k = 0; k < owned.size(); ++k) {
    const ConstantEntry& e = entries[owned[k]];
    StoragePtr storage = Storage::create(base + layout.offsets[k], e.data_size, device_, [arena](void*) {});
    if (e.read_only()) storage->mark_constant();
    out[owned[k]] = Tensor(std::move(storage), e.dtype, e.sizes, e.strides, e.storage_offset);
  }
  arena.reset();  // the tensors hold it now

  uint64_t upload_bytes = 0;
  std::vector<UploadRegion> uploads;
  uploads.reserve(layout.copies.size());
  for (const ArenaCopy& c : layout.copies) {
    if (blob.has_bytes())
      uploads.push_back(UploadRegion{base + c.arena_offset, blob.bytes.data() + c.blob_offset, c.nbytes});
    else
      uploads.push_back(UploadRegion{base + c.arena_offset, nullptr, c.nbytes, &blob.reader, c.blob_offset});
    upload_bytes += c.nbytes;
  }
  if (!uploads.empty()) {
    // allocate_long_lived memory is ready for the upload's own streams.
    const Clock::time_point allocated = Clock::now();
    Error err = iface->upload(uploads, index);
    if (err != Error::Ok)
      return set_error(err, "copying weights to " + device_string(device_) + ": " + last_error_message());
    const Clock::time_point done = Clock::now();
    const double alloc_s = std::chrono::duration<double>(allocated - start).count();
    const double upload_s = std::chrono::duration<double>(done - allocated).count();
    char line[256];
    std::snprintf(line, sizeof line,
                  "placed %zu weights (%.3f GB) on %s in one %.3f GB arena: allocation %.4f s, "
                  "upload %.4f s in %zu regions (%.1f GB/s)",
                  owned.size(), upload_bytes / 1e9, device_string(device_).c_str(), arena_bytes / 1e9, alloc_s,
                  upload_s, uploads.size(), upload_s > 0 ? upload_bytes / upload_s / 1e9 : 0.0);
    KILN_LOG(Info, line);
  }
  // Published only once their bytes are there.
  for (const auto& [i, key] : new_shared) shared_.emplace(key, out[i]);
  return out;
}

}  // namespace kiln::aoti
