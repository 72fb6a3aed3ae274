// Per-thread state the shims keep between calls: the grad-mode flag and the
// "an aoti_torch_check failed" flag. Internal to libkiln.
#pragma once

#include <string>

namespace kiln::aoti {

/// True if aoti_torch_check saw a false condition on this thread since the last
/// call; clears the flag. The AOTI delegate calls it after a model run: a model
/// whose assertion failed cannot be stopped from inside the void check hook, so
/// the delegate turns a "successful" run into an error here. Thread-local.
bool take_check_failure() noexcept;

/// Sets the flag (used by aoti_torch_check).
void note_check_failure() noexcept;

}  // namespace kiln::aoti
