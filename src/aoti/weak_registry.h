// WeakRegistry: one shared object per key for as long as someone holds it.
// The per-program stream (OwnedStream::shared_for) and the per-program weight
// store (WeightStore::for_program) are both "the live one, else a new one":
// the registry keeps weak references, so an object goes with its last user,
// and expired entries are swept on each lookup.
//
// Thread-safety: get_or_create may be called from several threads; `make`
// runs under the registry's lock.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "kiln/error.h"

namespace kiln::aoti {

template <typename Key, typename T>
class WeakRegistry {
 public:
  /// The live object for `key`, else make() (a Result<std::shared_ptr<T>>)
  /// registered under it.
  template <typename Make>
  Result<std::shared_ptr<T>> get_or_create(const Key& key, Make make) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end();) it = it->second.expired() ? entries_.erase(it) : ++it;
    if (auto it = entries_.find(key); it != entries_.end())
      if (auto live = it->second.lock()) return live;
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<T> made, make());
    entries_[key] = made;
    return made;
  }

 private:
  std::mutex mutex_;
  std::map<Key, std::weak_ptr<T>> entries_;
};

}  // namespace kiln::aoti
