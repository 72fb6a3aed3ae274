#include "kiln/storage.h"

namespace kiln {

StoragePtr Storage::create(void* data, size_t nbytes, Device device, Deleter deleter) {
  return StoragePtr(new Storage(data, nbytes, device, std::move(deleter)));
}

Storage::~Storage() {
  if (deleter_) deleter_(data_);
}

void Storage::release() noexcept {
  if (refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

}  // namespace kiln
