#include "aoti/device_weights.h"

#include <chrono>
#include <cstdio>
#include <tuple>

#include "aoti/weak_registry.h"
#include "kiln/device_interface.h"
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
                                               std::span<const uint8_t> blob) {
  DeviceInterface* iface = get_device_interface(device_.type);
  if (!iface) return set_error(Error::NotSupported, "no device interface for " + device_string(device_));
  std::lock_guard<std::mutex> lock(mutex_);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  size_t upload_bytes = 0;
  std::vector<Tensor> out(entries.size());
  std::vector<UploadRegion> uploads;
  std::vector<std::pair<size_t, std::string>> new_shared;  // entry index, key
  for (size_t i = 0; i < entries.size(); ++i) {
    const ConstantEntry& e = entries[i];
    const std::string key = share_key(e);
    if (!key.empty())
      if (auto it = shared_.find(key); it != shared_.end()) {
        out[i] = it->second;
        continue;
      }
    const uint8_t* src = blob.data() + e.blob_offset;
    StoragePtr storage;
    if (device_.is_cpu() && e.read_only()) {
      // Borrowed: the mapping outlives every user (the store holds the program).
      storage = Storage::create(const_cast<uint8_t*>(src), e.data_size, device_);
    } else {
      const size_t nbytes = e.data_size > 0 ? e.data_size : 1;
      auto data = iface->allocate(nbytes, device_.index, nullptr);
      if (!data.ok())
        return set_error(data.error(), "allocating " + std::to_string(nbytes) + " bytes on " +
                                           device_string(device_) + " for weight '" + e.name + "': " +
                                           last_error_message());
      const int index = device_.index;
      storage = Storage::create(*data, nbytes, device_, [iface, index](void* p) { iface->free(p, index, nullptr); });
      if (e.data_size > 0) uploads.push_back(UploadRegion{*data, src, e.data_size});
      upload_bytes += e.data_size;
    }
    out[i] = Tensor(std::move(storage), e.dtype, e.sizes, e.strides, e.storage_offset);
    if (!key.empty()) new_shared.emplace_back(i, key);
  }
  if (!uploads.empty()) {
    const Clock::time_point allocated = Clock::now();
    Error err = iface->upload(uploads, device_.index);
    if (err != Error::Ok)
      return set_error(err, "copying weights to " + device_string(device_) + ": " + last_error_message());
    const Clock::time_point done = Clock::now();
    const double alloc_s = std::chrono::duration<double>(allocated - start).count();
    const double upload_s = std::chrono::duration<double>(done - allocated).count();
    char line[200];
    std::snprintf(line, sizeof line, "placed %zu weights (%.3f GB) on %s: allocation %.4f s, upload %.4f s (%.1f GB/s)",
                  uploads.size(), upload_bytes / 1e9, device_string(device_).c_str(), alloc_s, upload_s,
                  upload_s > 0 ? upload_bytes / upload_s / 1e9 : 0.0);
    KILN_LOG(Info, line);
  }
  // Published only once their bytes are there.
  for (const auto& [i, key] : new_shared) shared_.emplace(key, out[i]);
  return out;
}

}  // namespace kiln::aoti
