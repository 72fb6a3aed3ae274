#include "shims/common/memory_budget.h"

#include <string>
#include <utility>

#include "core/device_table.h"

namespace kiln::aoti {
namespace {
thread_local MemoryBudget* t_current_budget = nullptr;
thread_local bool t_out_of_memory = false;

Result<Tensor> allocate_in_budget(std::span<const int64_t> sizes, std::span<const int64_t> strides, DType dtype,
                                  Device device) {
  MemoryBudget* budget = t_current_budget;
  if (!budget) return Tensor::empty_strided(sizes, strides, dtype, device);
  KILN_ASSIGN_OR_RETURN(int64_t extent, strided_extent_bytes(sizes, strides, dtype));
  DeviceInterface* iface = device_for(device.type);
  if (!iface)
    return set_error(Error::NotSupported, "no device backend for '" + device_string(device) + "' in this build");
  // As Tensor::empty_strided: zero-byte tensors still get a unique pointer.
  const size_t nbytes = extent > 0 ? static_cast<size_t>(extent) : 1;
  KILN_RETURN_IF_ERROR(budget->charge(nbytes, "a tensor on " + device_string(device)));
  auto data = iface->allocate(nbytes, device.index, nullptr);
  if (!data.ok()) {
    budget->release(nbytes);
    return data.error();
  }
  // from_blob cannot fail here: it checks the same geometry, checked above.
  const int index = device.index;
  std::shared_ptr<MemoryBudget> owner = budget->shared_from_this();
  return Tensor::from_blob(*data, sizes, strides, dtype, device, [iface, index, owner, nbytes](void* p) {
    iface->free(p, index, nullptr);
    owner->release(nbytes);
  });
}
}  // namespace

std::shared_ptr<MemoryBudget> MemoryBudget::create(size_t limit_bytes, std::string owner) {
  return std::shared_ptr<MemoryBudget>(new MemoryBudget(limit_bytes, std::move(owner)));
}

Error MemoryBudget::charge(size_t bytes, const std::string& what) {
  size_t used = in_use_.load();
  do {
    if (bytes > limit_ || used > limit_ - bytes)
      return set_error(Error::OutOfMemory, owner_ + ": " + what + " needs " + std::to_string(bytes) +
                                               " bytes but its memory limit (aoti.max_memory_bytes) is " +
                                               std::to_string(limit_) + " bytes with " + std::to_string(used) +
                                               " in use");
  } while (!in_use_.compare_exchange_weak(used, used + bytes));
  return Error::Ok;
}

void MemoryBudget::release(size_t bytes) noexcept { in_use_.fetch_sub(bytes); }

MemoryBudgetScope::MemoryBudgetScope(MemoryBudget* budget) noexcept : previous_(t_current_budget) {
  t_current_budget = budget;
}

MemoryBudgetScope::~MemoryBudgetScope() { t_current_budget = previous_; }

Result<Tensor> empty_strided_in_budget(std::span<const int64_t> sizes, std::span<const int64_t> strides, DType dtype,
                                       Device device) {
  auto tensor = allocate_in_budget(sizes, strides, dtype, device);
  if (!tensor.ok() && tensor.error() == Error::OutOfMemory) t_out_of_memory = true;
  return tensor;
}

bool take_out_of_memory() noexcept {
  const bool out_of_memory = t_out_of_memory;
  t_out_of_memory = false;
  return out_of_memory;
}

}  // namespace kiln::aoti
