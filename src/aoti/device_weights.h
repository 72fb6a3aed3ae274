// WeightStore: the weights of one program's methods on one device, placed by
// Kiln from the weights table (constants_table.h) instead of by the library.
//
// Why: the library's own loader copies its blob constant by constant with
// synchronous pageable cudaMemcpy, keeps a private copy per method, and on the
// CPU duplicates weights that are already in the program's mapping. Here:
//   - CUDA: the constants of one place() call share one device allocation
//     (an arena, weight_arena.h) laid out like the blob, filled by one bulk
//     upload of a few large regions (DeviceInterface::upload: pinned staging,
//     parallel, overlapped);
//   - CPU: constants the model never writes (parameters, tensor constants) are
//     views of the weights blob the program read into private memory, so they
//     cost no second copy; buffers (which a model may update in place) are
//     copied;
//   - methods of one program that use the same constant (same FQN, same bytes,
//     same geometry) get the same tensor, so shared weights live once.
//
// Ownership: a store belongs to the methods of its program on its device
// (shared_ptr; a registry keeps only weak references, like shared streams)
// and keeps the program alive. The tensors it hands out
// stay valid while any method holds the store. Each tensor of an arena has a
// Storage of its own that holds the arena: the arena is freed with the last
// tensor placed in it (the store's, or a method's handle, whichever goes last).
//
// Thread-safety: place() may be called from several threads.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "aoti/constants_table.h"
#include "kiln/device.h"
#include "core/device_interface.h"
#include "kiln/program_file.h"
#include "kiln/tensor.h"

namespace kiln::aoti {

/// The weights blob a placement copies from: its private copy (`bytes`,
/// digest-checked unless aoti.verify_weights is off), or, for a device method
/// loading unchecked weights, `reader` over the program file, so the upload
/// reads the file straight into its staging buffers and no host copy of the
/// blob is made at all. CPU views need `bytes`.
struct WeightsSource {
  NamedBytes bytes;
  UploadReader reader;
  bool has_bytes() const noexcept { return bytes.owner() != nullptr; }
};

class WeightStore {
 public:
  /// The store of `program` on `device`: the live one if a method holds it,
  /// else a new one.
  static Result<std::shared_ptr<WeightStore>> for_program(const std::shared_ptr<const ProgramFile>& program,
                                                          Device device);

  /// One tensor per entry, in order: shared with an earlier call when it
  /// placed the same constant, else placed now from `blob` (the method's
  /// weights; CPU views keep its private copy alive).
  Result<std::vector<Tensor>> place(const std::vector<ConstantEntry>& entries, const WeightsSource& blob);

  /// `iface`: the device's memory and copies; null = the registered interface
  /// of `device`'s type (tests pass a counting one).
  WeightStore(std::shared_ptr<const ProgramFile> program, Device device, DeviceInterface* iface = nullptr)
      : program_(std::move(program)), device_(device), iface_(iface) {}

 private:
  static std::string share_key(const ConstantEntry& e);

  std::shared_ptr<const ProgramFile> program_;
  Device device_;
  DeviceInterface* iface_;
  mutable std::mutex mutex_;
  std::map<std::string, Tensor> shared_;  // share_key -> placed tensor
};

}  // namespace kiln::aoti
