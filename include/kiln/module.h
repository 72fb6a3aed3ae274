// Module: the user-facing handle on one `.kiln` program.
//
//   kiln::Module module("model.kiln");
//   if (module.load() != kiln::Error::Ok) { ... kiln::last_error_message() ... }
//   auto outputs = module.forward({input});
//
// Ownership: a Module owns its opened ProgramFile, its deep copy of the load
// options, and every loaded method (library, container, weights), and shares
// ownership of its Runtime (kiln/runtime.h). Tensors it returns own their
// memory and outlive the Module.
// Thread safety: load/load_method/unload_method must not race with anything
// else on the same Module; execute may be called from several threads at once
// on loaded methods (each method serialises or parallelises as its backend
// allows).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/backend_options.h"
#include "kiln/error.h"
#include "kiln/export.h"
#include "kiln/program_file.h"
#include "kiln/runtime.h"
#include "kiln/tensor.h"

namespace kiln {

class MethodExecutor;
class SealedFile;

/// Name under which load() takes options for the program itself rather than
/// for a backend (LoadBackendOptionsMap::set_options(kProgramOptions, ...)):
///   require_signature  bool    refuse the program unless it is signed by a
///                              trusted key and every library and weights blob
///                              matches its signed digest; checked in load(),
///                              before any library is loaded
///   trusted_keys       string  public key lines (the text of .pub files)
///   trusted_keys_file  string  trusted-keys files, ':'-separated
/// The runtime's settings add to this: require_signature requires a signature
/// for every program, trusted_keys lists more trusted-keys files (also from the
/// environment: KILN_REQUIRE_SIGNATURE=1, KILN_TRUSTED_KEYS; docs/settings.md).
/// See kiln/signing.h and docs/program-format.md, "Signatures".
inline constexpr std::string_view kProgramOptions = "program";

class KILN_API Module {
 public:
  /// Nothing is read until load(). `data_files`: external weight files.
  /// `runtime` must not be null.
  Module(std::shared_ptr<Runtime> runtime, std::string path, std::vector<std::string> data_files = {});
  /// A module of Runtime::default_runtime().
  explicit Module(std::string path, std::vector<std::string> data_files = {})
      : Module(Runtime::default_runtime(), std::move(path), std::move(data_files)) {}
  /// A module of the program in `bytes` (a .kiln program with its weights
  /// inside, or a PyTorch .pt2 package), copied at once into a sealed
  /// in-memory file: the caller may free `bytes` on return, and nothing can
  /// change the program afterwards. Messages name it by that file's path
  /// (/proc/self/fd/N). NotSupported where the system has no sealed
  /// in-memory files (memfd_create, Linux 3.17+).
  static Result<std::unique_ptr<Module>> from_bytes(std::shared_ptr<Runtime> runtime,
                                                    std::span<const uint8_t> bytes);

  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Opens and validates the program, then deep-copies `options` (the caller
  /// may free its map right after). Validates options against each backend
  /// the program uses. Commits only on success: on error the Module is left
  /// as it was, except under a signature policy (below). Calling it again
  /// replaces the options of methods loaded later.
  /// With a signature policy (kProgramOptions / environment) an unsigned,
  /// untrusted or modified program fails here with IntegrityError. The policy
  /// is sticky: once a load() asked for a signature, every later load of this
  /// Module requires one too (require_signature=false is refused), a refused
  /// load unloads the program and every method, and the loads that execute,
  /// load_method, method_names and method_meta make on the caller's behalf
  /// repeat the last load() request, policy included.
  Error load(const LoadBackendOptionsMap& options = {});
  bool is_loaded() const noexcept;

  /// Loads (dlopen, create container, upload weights) one method. Without
  /// `options` the Module's copy from load() is used. If the program is not
  /// loaded, the last load() request is repeated first (no options if there
  /// was none).
  Error load_method(std::string_view name, const LoadBackendOptionsMap* options = nullptr);
  bool is_method_loaded(std::string_view name) const;
  /// Frees everything the method holds. NotFound if not loaded.
  Error unload_method(std::string_view name);

  /// Runs a method, loading it first if needed. Inputs are checked against the
  /// method's contract (count, dtype, rank, static dims, dynamic bounds, device,
  /// and that each view lies inside its storage) and the error names the input.
  /// Inputs may have any strides and storage offset (transposed, sliced,
  /// broadcast with stride 0, ...): one whose layout differs from the layout the
  /// method was compiled for (TensorSpec::dim_order) is copied into that layout
  /// on the method's device before any kernel runs (on CUDA also a device input
  /// whose data is not 16-byte aligned); one already in it is used as it is,
  /// without a copy (a view, with the compiled strides, when only the strides
  /// of size-1 dimensions differ). Kiln does not modify inputs; a method whose
  /// program writes into an input (a torch.export user-input mutation, e.g. a
  /// KV cache updated in place: examples/llm) writes into the caller's memory
  /// when the input is already where the method runs (any input of a CPU
  /// method, a device input of a device method). The exporter names such
  /// inputs (method metadata `mutated_inputs`), and Kiln keeps the writes from
  /// being lost: a CPU tensor for one of them on a device method is refused
  /// with InvalidArgument (a copy would take the writes), so is one in another
  /// layout than the compiled one (naming the expected and actual strides);
  /// under aoti.cuda_graphs such inputs are bound by address rather than
  /// copied, so a replay writes the caller's buffer, and another buffer gets a
  /// graph of its own (docs/cuda.md).
  /// A check the compiled code makes on input values (an index out of range
  /// of an embedding table) fails the call with BackendFailed, also when it
  /// failed on a kernel's worker thread; the kernel itself has run past the
  /// check by then, as AOTInductor's code does not stop there. Known
  /// limitation: an index far outside the table makes that kernel read far
  /// outside it, which can end the process (SIGSEGV) before the failure is
  /// reported; validate indices that come from untrusted callers.
  Result<std::vector<Tensor>> execute(std::string_view name, const std::vector<Tensor>& inputs);
  Result<std::vector<Tensor>> forward(const std::vector<Tensor>& inputs) { return execute("forward", inputs); }

  Result<std::vector<std::string>> method_names();
  Result<MethodInfo> method_meta(std::string_view name);
  /// The opened program (nullptr before load()).
  std::shared_ptr<const ProgramFile> program() const;

 private:
  // load_method's work; returns the method's executor (already loaded or new),
  // so execute gets the one it loaded even if another thread unloads the
  // method right after.
  Result<std::shared_ptr<MethodExecutor>> load_executor(std::string_view name, const LoadBackendOptionsMap* options);
  // Repeats the last load() request unless the program is loaded.
  Error load_if_needed();
  // load() with mutex_ held; try_load does the work, load_locked applies the
  // sticky signature policy to its outcome.
  Error load_locked(const LoadBackendOptionsMap& options);
  // `asked_before`: an earlier load() asked for a signature.
  Error try_load(const LoadBackendOptionsMap& options, bool asked_before);

  std::shared_ptr<Runtime> runtime_;
  std::unique_ptr<SealedFile> memory_file_;  // holds the program of from_bytes; path_ names it
  std::string path_;
  std::vector<std::string> data_files_;
  std::shared_ptr<const ProgramFile> program_;
  LoadBackendOptionsMap options_;    // of the last successful load()
  LoadBackendOptionsMap requested_;  // of the last load() call, successful or not
  bool signature_required_ = false;  // some load() asked for a signature: required from then on
  bool signed_ = false;              // program_ passed a signature policy
  // Entries checked by the signature policy, kept until a method using them loads.
  std::map<std::string, NamedBytes, std::less<>> verified_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<MethodExecutor>, std::less<>> methods_;
};

}  // namespace kiln
