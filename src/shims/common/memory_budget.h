// MemoryBudget: the byte limit a method was loaded with (option
// aoti.max_memory_bytes), so a model that needs more memory than it was given
// fails with OutOfMemory instead of taking the process's memory from other
// models.
//
// What counts: the weights blob the model container allocates at load, and
// every tensor the model library creates through aoti_torch_empty_strided
// while the method loads or runs (activations, outputs). Outputs handed to the
// caller stay charged until the caller frees them.
//
// The model library calls the shims on the thread that called load/execute, so
// the method makes its budget the thread's current one for the duration of
// the call (MemoryBudgetScope) and the shim charges whatever budget is current.
//
// Ownership: a method owns its budget through a shared_ptr; every tensor
// charged to it holds a reference, so a budget outlives the method when the
// caller keeps outputs. Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::aoti {

class MemoryBudget : public std::enable_shared_from_this<MemoryBudget> {
 public:
  static std::shared_ptr<MemoryBudget> create(size_t limit_bytes, std::string owner);

  /// Takes `bytes` from the budget, or fails with OutOfMemory naming the owner,
  /// `what`, the bytes asked for, the limit and what is in use.
  Error charge(size_t bytes, const std::string& what);
  /// Gives back bytes from a successful charge().
  void release(size_t bytes) noexcept;

  size_t limit() const noexcept { return limit_; }
  size_t in_use() const noexcept { return in_use_.load(); }

 private:
  MemoryBudget(size_t limit_bytes, std::string owner) : limit_(limit_bytes), owner_(std::move(owner)) {}
  const size_t limit_;
  const std::string owner_;
  std::atomic<size_t> in_use_{0};
};

/// Makes `budget` (may be null: no limit) the calling thread's current budget
/// until the scope ends; scopes nest.
class MemoryBudgetScope {
 public:
  explicit MemoryBudgetScope(MemoryBudget* budget) noexcept;
  ~MemoryBudgetScope();
  MemoryBudgetScope(const MemoryBudgetScope&) = delete;
  MemoryBudgetScope& operator=(const MemoryBudgetScope&) = delete;

 private:
  MemoryBudget* previous_;
};

/// A new uninitialised tensor, charged to the thread's current budget (if any)
/// until its storage is freed. Used by the shim's tensor constructors.
Result<Tensor> empty_strided_in_budget(std::span<const int64_t> sizes, std::span<const int64_t> strides, DType dtype,
                                       Device device);

/// True if empty_strided_in_budget failed with OutOfMemory (budget or device)
/// on this thread since the last call; clears the flag. The model library only
/// reports 0/1, so the delegate reads this to report such a run as
/// OutOfMemory rather than as a generic backend failure.
bool take_out_of_memory() noexcept;

}  // namespace kiln::aoti
