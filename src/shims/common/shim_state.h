// Per-thread state the shims keep between calls: the grad-mode flag and the
// "an aoti_torch_check failed" flag. Internal to libkiln.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::aoti {

/// True if aoti_torch_check saw a false condition on this thread since the last
/// call; clears the flag. The AOTI delegate calls it after a model run: a model
/// whose assertion failed cannot be stopped from inside the void check hook, so
/// the delegate turns a "successful" run into an error here. Thread-local.
bool take_check_failure() noexcept;

/// Sets the flag and counts the failure process-wide (used by aoti_torch_check).
void note_check_failure(const std::string& message) noexcept;

/// Failed checks so far on any thread. A check inside a kernel's parallel
/// region fails on an OpenMP worker, whose thread-local flag the thread
/// running the method never sees: the delegate compares this count before and
/// after a run. (A concurrent run's failure can make another run fail too: a
/// spurious error, never a silent wrong answer.)
uint64_t check_failure_count() noexcept;
/// The message of the most recent failed check on any thread ("" if none).
std::string last_check_failure_message();

}  // namespace kiln::aoti
