// Grad mode, the model's check/warn hooks and the debug printer hook.
#include <atomic>
#include <mutex>
#include <string>

#include "shims/common/shim_state.h"
#include "shims/common/shim_util.h"
#include "kiln/log.h"

namespace kiln::aoti {
namespace {
// Kiln only runs inference: grad mode starts off and nothing reads it but the
// model itself (which saves and restores it around a run).
thread_local bool t_grad_enabled = false;
thread_local bool t_check_failed = false;

const char* or_empty(const char* s) { return s ? s : ""; }

std::atomic<uint64_t> g_check_failures{0};
std::mutex g_check_message_mutex;
std::string g_check_message;
}  // namespace

bool take_check_failure() noexcept {
  const bool failed = t_check_failed;
  t_check_failed = false;
  return failed;
}

void note_check_failure(const std::string& message) noexcept {
  t_check_failed = true;
  try {
    std::lock_guard<std::mutex> lock(g_check_message_mutex);
    g_check_message = message;
  } catch (...) {
  }
  g_check_failures.fetch_add(1, std::memory_order_release);
}

uint64_t check_failure_count() noexcept { return g_check_failures.load(std::memory_order_acquire); }

std::string last_check_failure_message() {
  std::lock_guard<std::mutex> lock(g_check_message_mutex);
  return g_check_message;
}

}  // namespace kiln::aoti

using namespace kiln;
using namespace kiln::aoti;

extern "C" {

KILN_SHIM_EXPORT bool aoti_torch_grad_mode_is_enabled() { return t_grad_enabled; }
KILN_SHIM_EXPORT void aoti_torch_grad_mode_set_enabled(bool enabled) { t_grad_enabled = enabled; }

// libtorch implements this by throwing c10::Error, which the model's entry
// points catch and turn into a failed run. Kiln must not throw into the model
// library (it is built against another C++ runtime, and the policy is that no
// exception crosses the ABI) and must not abort the host. So a failed check is
// logged, recorded as the thread's error, flagged for the delegate
// (take_check_failure), and execution returns to the model, which continues
// past its assertion. The delegate reports the run as failed afterwards; any
// outputs of such a run are not to be trusted.
KILN_SHIM_EXPORT void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line,
                                       const char* msg) {
  if (cond) return;
  std::string text;
  try {
    text = std::string("aoti_torch_check failed in ") + or_empty(func) + " at " + or_empty(file) + ":" +
           std::to_string(line) + ": " + or_empty(msg);
    KILN_LOG(Error, text);
    set_error(Error::BackendFailed, text);
  } catch (...) {
  }
  note_check_failure(text);
}

KILN_SHIM_EXPORT void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg) {
  try {
    KILN_LOG(Warning, std::string("model warning in ") + or_empty(func) + " at " + or_empty(file) + ":" +
                          std::to_string(line) + ": " + or_empty(msg));
  } catch (...) {
  }
}

KILN_SHIM_EXPORT void aoti_torch_print_tensor_handle(AtenTensorHandle self, const char* msg) {
  try {
    const Tensor* t = from_handle(self);
    KILN_LOG(Info, std::string(or_empty(msg)) + " " + (t ? (t->defined() ? t->describe() : "undefined") : "null"));
  } catch (...) {
  }
}

}  // extern "C"
