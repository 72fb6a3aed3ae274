#include "kiln/storage.h"

#include <mutex>
#include <unordered_map>

namespace kiln {

StoragePtr Storage::create(void* data, size_t nbytes, Device device, Deleter deleter) {
  return StoragePtr(new Storage(data, nbytes, device, std::move(deleter)));
}

struct Storage::Derived {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const void>> entries;
};

Storage::Storage(void* data, size_t nbytes, Device device, Deleter deleter)
    : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  derived_.reset();  // derived data may refer to the bytes: it goes first
  if (deleter_) deleter_(data_);
}

void Storage::mark_constant() {
  if (!derived_) derived_ = std::make_unique<Derived>();
}

std::shared_ptr<const void> Storage::derived(const std::string& key,
                                             const std::function<std::shared_ptr<const void>()>& make) const {
  if (!derived_) return nullptr;
  std::lock_guard<std::mutex> lock(derived_->mutex);
  auto it = derived_->entries.find(key);
  if (it != derived_->entries.end()) return it->second;
  std::shared_ptr<const void> made = make();
  if (made) derived_->entries.emplace(key, made);
  return made;
}

void Storage::release() noexcept {
  if (refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

}  // namespace kiln
