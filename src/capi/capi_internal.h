// Private helpers shared by the C API translation units: the handle structs
// behind the opaque kiln_*_t types and the no-throw firewall every extern "C"
// function runs its body through.
#pragma once

#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kiln/backend_options.h"
#include "kiln/c_api.h"
#include "kiln/error.h"
#include "kiln/module.h"
#include "kiln/program_file.h"
#include "kiln/runtime.h"
#include "kiln/tensor.h"

struct kiln_tensor_t {
  kiln::Tensor tensor;
};

struct kiln_options_t {
  kiln::LoadBackendOptionsMap map;
};

struct kiln_tensor_spec_t {
  kiln::TensorSpec spec;
};

struct kiln_method_meta_t {
  kiln::MethodInfo info;
  std::vector<kiln_tensor_spec_t> inputs;
  std::vector<kiln_tensor_spec_t> outputs;
  // Copy of info.metadata in key order, so entries can be addressed by index.
  std::vector<std::pair<std::string, std::string>> metadata;
};

struct kiln_runtime_t {
  std::shared_ptr<kiln::Runtime> runtime;
};

struct kiln_module_t {
  explicit kiln_module_t(std::unique_ptr<kiln::Module> m) : module(std::move(m)) {}
  std::unique_ptr<kiln::Module> module;  // never null
  // Method names handed out by kiln_module_method_name. A node-based set keeps
  // every returned pointer valid until the module is freed, even if a later
  // load re-reads a program with different names.
  std::mutex names_mutex;
  std::set<std::string, std::less<>> interned_names;
};

namespace kiln::capi {

/// Records "<fn>: argument '<arg>' must not be NULL" and returns InvalidArgument.
Error null_argument(const char* fn, const char* arg);

/// Converts an escaping exception into a status and message. Never throws.
kiln_status_t exception_to_status(const char* fn, std::exception_ptr error) noexcept;

/// Runs `body(fn)` (returning kiln::Error) so that nothing escapes: exceptions
/// become codes (bad_alloc -> OutOfMemory). On success the thread's message is
/// cleared, so kiln_last_error_message() always describes the latest call.
template <typename Body>
kiln_status_t guard(const char* fn, Body&& body) noexcept {
  try {
    const Error error = body(fn);
    if (error == Error::Ok) clear_error();
    return static_cast<kiln_status_t>(error);
  } catch (...) {
    return exception_to_status(fn, std::current_exception());
  }
}

}  // namespace kiln::capi

/// Inside a guard body: fails with InvalidArgument naming `arg` if it is NULL.
#define KILN_CAPI_REQUIRE(arg) \
  do {                         \
    if ((arg) == nullptr) return ::kiln::capi::null_argument(fn, #arg); \
  } while (0)
