#include "aoti/weight_placement.h"

#include <system_error>

namespace kiln::aoti {

WeightPlacement::Outcome WeightPlacement::run(WeightStore& store, const std::vector<ConstantEntry>& entries,
                                              const WeightsSource& blob) {
  Outcome o;
  o.tensors = store.place(entries, blob);
  if (!o.tensors.ok()) o.message = last_error_message();
  return o;
}

std::unique_ptr<WeightPlacement> WeightPlacement::start(std::shared_ptr<WeightStore> store,
                                                        std::vector<ConstantEntry> entries, WeightsSource blob,
                                                        bool on_thread) {
  std::unique_ptr<WeightPlacement> p(new WeightPlacement(std::move(store), std::move(entries)));
  p->blob_ = std::move(blob);
  if (on_thread) {
    // The thread reads the placement's own store, entries and blob, which
    // live until the destructor has joined it.
    WeightStore* s = p->store_.get();
    const std::vector<ConstantEntry>* e = &p->entries_;
    const WeightsSource* b = &p->blob_;
    try {
      p->pending_ = std::async(std::launch::async, [s, e, b] { return run(*s, *e, *b); });
      return p;
    } catch (const std::system_error&) {
      // No thread to be had: place them here, only without the overlap.
    }
  }
  p->done_ = run(*p->store_, p->entries_, p->blob_);
  return p;
}

Result<std::vector<Tensor>> WeightPlacement::take() {
  if (taken_) return set_error(Error::Internal, "the placed weights were already taken");
  taken_ = true;
  Outcome o = pending_.valid() ? pending_.get() : std::move(done_);
  if (!o.tensors.ok()) return set_error(o.tensors.error(), o.message);
  return std::move(o.tensors);
}

WeightPlacement::~WeightPlacement() {
  if (pending_.valid()) pending_.wait();
}

}  // namespace kiln::aoti
