// WeightPlacement: WeightStore::place for one method, started early and, on a
// GPU, run on a thread of its own, so the weights' upload (the bulk of a
// first load: tens of ms per GB) overlaps loading the model library, creating
// its container and loading its kernel modules, which need none of it.
//
// Ownership: a placement holds the store, the entries and the weights source
// (a private copy, or a reader of the program, which the store keeps alive)
// until it is destroyed.
// Destroying a placement that was never taken waits for its thread and drops
// the tensors (freeing the arena unless another method shares it).
//
// Errors: WeightStore::place reports on the thread that ran it; take()
// returns that error with its message on the caller's thread.
#pragma once

#include <future>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "aoti/constants_table.h"
#include "aoti/device_weights.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::aoti {

class WeightPlacement {
 public:
  /// Starts placing `entries` from `blob` through `store`: on a new thread
  /// when `on_thread`, else right here (CPU weights are mostly views of the
  /// blob, so a thread would cost more than the placement).
  static std::unique_ptr<WeightPlacement> start(std::shared_ptr<WeightStore> store,
                                                std::vector<ConstantEntry> entries, WeightsSource blob,
                                                bool on_thread);

  /// The placed tensors, one per entry in order (waits for the thread). Once.
  Result<std::vector<Tensor>> take();
  const std::vector<ConstantEntry>& entries() const noexcept { return entries_; }
  const std::shared_ptr<WeightStore>& store() const noexcept { return store_; }

  ~WeightPlacement();
  WeightPlacement(const WeightPlacement&) = delete;
  WeightPlacement& operator=(const WeightPlacement&) = delete;

 private:
  struct Outcome {
    Result<std::vector<Tensor>> tensors{Error::Internal};
    std::string message;  // the placing thread's error message when it failed
  };
  WeightPlacement(std::shared_ptr<WeightStore> store, std::vector<ConstantEntry> entries)
      : store_(std::move(store)), entries_(std::move(entries)) {}
  static Outcome run(WeightStore& store, const std::vector<ConstantEntry>& entries, const WeightsSource& blob);

  std::shared_ptr<WeightStore> store_;
  std::vector<ConstantEntry> entries_;
  WeightsSource blob_;
  std::future<Outcome> pending_;  // valid while a thread's outcome is not taken
  Outcome done_;                  // the inline outcome
  bool taken_ = false;
};

}  // namespace kiln::aoti
