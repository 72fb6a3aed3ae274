// Storage: a refcounted block of device memory with the deleter that frees it.
//
// Ownership: a Storage is created with refcount 1 and destroyed (its deleter run
// on the data pointer) when the last StoragePtr releases it. A Storage made with
// no deleter borrows its memory: the creator keeps the memory alive for as long
// as any tensor refers to it. Thread-safe refcounting; the bytes themselves are
// not synchronised. A storage marked constant (a program's read-only weights)
// also keeps data kernels derive from its bytes, such as a weight packed for a
// GEMM, and frees it with the storage.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "kiln/device.h"
#include "kiln/export.h"

namespace kiln {

class Storage;

/// Intrusive strong reference to a Storage. Copy = retain, destroy = release.
class StoragePtr {
 public:
  StoragePtr() = default;
  StoragePtr(const StoragePtr& other) noexcept;
  StoragePtr(StoragePtr&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  StoragePtr& operator=(StoragePtr other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }
  ~StoragePtr();

  Storage* get() const noexcept { return ptr_; }
  Storage* operator->() const noexcept { return ptr_; }
  Storage& operator*() const noexcept { return *ptr_; }
  explicit operator bool() const noexcept { return ptr_ != nullptr; }

 private:
  friend class Storage;
  explicit StoragePtr(Storage* adopted) noexcept : ptr_(adopted) {}
  Storage* ptr_ = nullptr;
};

class KILN_API Storage {
 public:
  /// Frees `data`. Called exactly once, when the last reference goes.
  using Deleter = std::function<void(void* data)>;

  /// Wraps `data` (`nbytes` long, on `device`). With a deleter the storage owns
  /// the memory; with an empty one it borrows it.
  static StoragePtr create(void* data, size_t nbytes, Device device, Deleter deleter = {});

  void* data() const noexcept { return data_; }
  size_t nbytes() const noexcept { return nbytes_; }
  Device device() const noexcept { return device_; }
  bool owns_memory() const noexcept { return static_cast<bool>(deleter_); }
  /// Declares the bytes constant for the rest of the storage's life: nothing
  /// writes them. The loader marks a program's read-only weights before any
  /// model runs; kernels may then keep data derived from them (derived()).
  void mark_constant();
  bool is_constant() const noexcept { return derived_ != nullptr; }
  /// Data derived from a constant storage's bytes, made by `make` the first
  /// time `key` is asked for and kept, shared by every caller, until the
  /// storage goes. Null from a storage that is not constant, or when `make`
  /// gives null (then the next call tries again). `make` runs under the
  /// storage's lock: it must not ask this storage for derived data.
  std::shared_ptr<const void> derived(const std::string& key,
                                      const std::function<std::shared_ptr<const void>()>& make) const;
  /// Current number of references (for tests and diagnostics only).
  int64_t use_count() const noexcept { return refcount_.load(std::memory_order_relaxed); }

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

 private:
  friend class StoragePtr;
  struct Derived;
  Storage(void* data, size_t nbytes, Device device, Deleter deleter);
  ~Storage();
  void retain() noexcept { refcount_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept;

  std::atomic<int64_t> refcount_{1};
  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter deleter_;
  std::unique_ptr<Derived> derived_;  // set by mark_constant()
};

inline StoragePtr::StoragePtr(const StoragePtr& other) noexcept : ptr_(other.ptr_) {
  if (ptr_) ptr_->retain();
}
inline StoragePtr::~StoragePtr() {
  if (ptr_) ptr_->release();
}

}  // namespace kiln
