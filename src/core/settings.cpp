#include "core/settings.h"

// g++ 12 at -O2 with the sanitizers reports the std::string alternative of a
// SettingValue as "maybe uninitialized" when a variant holding a bool or an
// int is moved into a Result (a false positive of its variant analysis).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <strings.h>

#include <cstdlib>

#include <cstring>

namespace kiln {
namespace {

using enum SettingType;
using enum SettingScope;

// The table. Keep it in SettingId order (checked below), one line of doc each:
// docs/settings.md is generated from it.
constexpr SettingInfo kSettingTable[] = {
    {SettingId::LogLevel, "log_level", Choice, Process, "warning", "debug|info|warning|error|off",
     "Least severe message printed to stderr."},
    {SettingId::RequireSignature, "require_signature", Bool, Runtime, "false", "",
     "Refuse every program not signed by a trusted key (load option program.require_signature adds to it)."},
    {SettingId::TrustedKeys, "trusted_keys", String, Runtime, "", "",
     "Trusted-keys files (':'-separated) added to those a load names."},
    {SettingId::DisableCuda, "disable_cuda", Bool, Runtime, "false", "",
     "Run nothing on CUDA: the CUDA plugin is not loaded for this runtime."},
    {SettingId::CudaPlugin, "cuda_plugin", String, Process, "", "",
     "Path of libkiln_cuda.so (default: next to libkiln.so); read when CUDA is first used."},
    {SettingId::CudaAllowTf32, "cuda_allow_tf32", Bool, Process, "false", "",
     "Let float32 matrix products and convolutions on CUDA use TF32 tensor cores."},
    {SettingId::CudaUploadWorkers, "cuda_upload_workers", Int, Process, "0", "",
     "Threads that stage weights for upload to a GPU (0: half the cores, at most 8; at most 32)."},
    {SettingId::CublasltLibrary, "cublaslt_library", String, Process, "", "",
     "cuBLASLt to open instead of libcublasLt.so.13; read when a model first needs it."},
    {SettingId::CudnnLibrary, "cudnn_library", String, Process, "", "",
     "cuDNN to open instead of libcudnn.so.9; read when a model first needs it."},
    {SettingId::CufftLibrary, "cufft_library", String, Process, "", "",
     "cuFFT to open instead of libcufft.so.12; read when a model first needs it."},
    {SettingId::CusolverLibrary, "cusolver_library", String, Process, "", "",
     "cuSOLVER to open instead of libcusolver.so.12; read when a model first needs it."},
    {SettingId::CublasLibrary, "cublas_library", String, Process, "", "",
     "cuBLAS to open instead of libcublas.so.13; read when a model first needs it."},
    {SettingId::CpuBlockCacheBytes, "cpu_block_cache_bytes", Int, Process, "1073741824", "",
     "Bytes of freed large host blocks kept for reuse (0: none); read at the first large allocation."},
    {SettingId::CpuPackWeights, "cpu_pack_weights", Bool, Process, "true", "",
     "Keep a program's float32 convolution and linear weights packed for Kiln's AVX-512 GEMM from their first "
     "use (host memory about that of those weights again); false: OpenBLAS packs them on every call. Read at "
     "the first packing."},
    {SettingId::PoisonAllocations, "poison_allocations", Bool, Process, "false", "",
     "Fill every host allocation with 0xFF (NaN in float formats) so an unwritten output cannot pass a test."},
    {SettingId::BlasLibrary, "blas_library", String, Process, "", "",
     "BLAS to open instead of libopenblas.so.0 / libblas.so.3; read at the first CPU matrix product."},
    {SettingId::SleefLibrary, "sleef_library", String, Process, "", "",
     "SLEEF to open for vectorised CPU kernels instead of the libsleef.so.3 beside libkiln.so (Python wheel) "
     "or on the library path; read when a model first needs it."},
    {SettingId::DisableMemfd, "disable_memfd", Bool, Process, "false", "",
     "Load model libraries through a private temporary file instead of a sealed memfd."},
};
static_assert(std::size(kSettingTable) == kSettingCount, "one table entry per SettingId");
constexpr bool table_in_id_order() {
  for (size_t i = 0; i < kSettingCount; ++i)
    if (static_cast<size_t>(kSettingTable[i].id) != i) return false;
  return true;
}
static_assert(table_in_id_order(), "kSettingTable must list the settings in SettingId order");

bool is_word(std::string_view text, const char* word) {
  return text.size() == std::strlen(word) && strncasecmp(text.data(), word, text.size()) == 0;
}

// Index of `word` among '|'-separated `choices`, or -1.
int64_t choice_index(std::string_view choices, std::string_view word) {
  int64_t i = 0;
  while (true) {
    const size_t bar = choices.find('|');
    if (choices.substr(0, bar) == word) return i;
    if (bar == std::string_view::npos) return -1;
    choices.remove_prefix(bar + 1);
    ++i;
  }
}

std::string_view choice_word(std::string_view choices, int64_t index) {
  for (int64_t i = 0; i < index; ++i) {
    const size_t bar = choices.find('|');
    if (bar == std::string_view::npos) return {};
    choices.remove_prefix(bar + 1);
  }
  return choices.substr(0, choices.find('|'));
}

}  // namespace

std::span<const SettingInfo> setting_table() noexcept { return kSettingTable; }

const SettingInfo* find_setting(std::string_view name) noexcept {
  for (const SettingInfo& info : kSettingTable)
    if (info.name == name) return &info;
  return nullptr;
}

const SettingInfo& setting_info(SettingId id) noexcept { return kSettingTable[static_cast<size_t>(id)]; }

std::string setting_environment_variable(const SettingInfo& info) {
  std::string name = "KILN_";
  for (char c : info.name) name += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return name;
}

std::string setting_type_name(const SettingInfo& info) {
  switch (info.type) {
    case Bool: return "bool";
    case Int: return "int";
    case String: return "string";
    case Choice: return std::string(info.choices);
  }
  return "?";
}

Result<SettingValue> parse_setting(const SettingInfo& info, std::string_view text) {
  const auto refuse = [&](const std::string& wants) -> Error {
    return set_error(Error::InvalidArgument, "setting '" + std::string(info.name) + "' takes " + wants + ", not '" +
                                                 std::string(text) + "'");
  };
  switch (info.type) {
    case Bool:
      for (const char* yes : {"1", "true", "on", "yes"})
        if (is_word(text, yes)) return SettingValue(true);
      for (const char* no : {"0", "false", "off", "no"})
        if (is_word(text, no)) return SettingValue(false);
      return refuse("a bool (1/true/on/yes or 0/false/off/no)");
    case Int: {
      int64_t value = 0;
      if (text.empty()) return refuse("a whole number >= 0");
      for (char c : text) {
        if (c < '0' || c > '9' || __builtin_mul_overflow(value, 10, &value) ||
            __builtin_add_overflow(value, c - '0', &value))
          return refuse("a whole number >= 0");
      }
      return SettingValue(value);
    }
    case String:
      return SettingValue(std::string(text));
    case Choice: {
      const int64_t index = choice_index(info.choices, text);
      if (index < 0) return refuse("one of " + std::string(info.choices));
      return SettingValue(std::string(text));
    }
  }
  return set_error(Error::Internal, "setting '" + std::string(info.name) + "' has no type");
}

std::string format_setting(const SettingInfo& info, const SettingValue& value) {
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const int64_t* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  return std::get<std::string>(value);
}

Settings::Settings() {
  for (const SettingInfo& info : kSettingTable) {
    auto fallback = parse_setting(info, info.fallback);
    (void)store(info.id, fallback.ok() ? *fallback : SettingValue(std::string()));
  }
  for (const SettingInfo& info : kSettingTable) {
    const std::string variable = setting_environment_variable(info);
    const char* text = std::getenv(variable.c_str());
    if (text == nullptr || *text == '\0') continue;  // unset or empty: not given
    auto parsed = parse_setting(info, text);
    if (!parsed.ok()) {
      // Not logged here: logging reads the log level from these settings.
      environment_errors_.push_back(variable + "='" + text + "': " + last_error_message());
      continue;
    }
    (void)store(info.id, *parsed);
    pinned_[index(info.id)] = variable + "=" + text;
  }
}

Error Settings::store(SettingId id, const SettingValue& value) {
  const SettingInfo& info = setting_info(id);
  SettingValue typed = value;
  if (const std::string* text = std::get_if<std::string>(&value); text && info.type != String) {
    KILN_ASSIGN_OR_RETURN(typed, parse_setting(info, *text));
  }
  const auto mistyped = [&](const std::string& wants) {
    return set_error(Error::InvalidArgument, "setting '" + std::string(info.name) + "' takes " + wants);
  };
  switch (info.type) {
    case Bool:
      if (!std::holds_alternative<bool>(typed)) return mistyped("a bool");
      numbers_[index(id)].store(std::get<bool>(typed) ? 1 : 0, std::memory_order_relaxed);
      return Error::Ok;
    case Int:
      if (!std::holds_alternative<int64_t>(typed) || std::get<int64_t>(typed) < 0)
        return mistyped("a whole number >= 0");
      numbers_[index(id)].store(std::get<int64_t>(typed), std::memory_order_relaxed);
      return Error::Ok;
    case String: {
      if (!std::holds_alternative<std::string>(typed)) return mistyped("a string");
      std::lock_guard<std::mutex> lock(mutex_);
      strings_[index(id)] = std::get<std::string>(typed);
      return Error::Ok;
    }
    case Choice:
      if (!std::holds_alternative<std::string>(typed)) return mistyped("one of " + std::string(info.choices));
      numbers_[index(id)].store(choice_index(info.choices, std::get<std::string>(typed)), std::memory_order_relaxed);
      return Error::Ok;
  }
  return set_error(Error::Internal, "setting '" + std::string(info.name) + "' has no type");
}

Error Settings::set(SettingId id, const SettingValue& value) {
  const SettingInfo& info = setting_info(id);
  if (!pinned_[index(id)].empty())
    return set_error(Error::InvalidState, "setting '" + std::string(info.name) + "' is fixed by the environment (" +
                                              pinned_[index(id)] + ")");
  return store(id, value);
}

SettingValue Settings::get(SettingId id) const {
  const SettingInfo& info = setting_info(id);
  switch (info.type) {
    case Bool: return get_bool(id);
    case Int: return get_int(id);
    case String: return get_string(id);
    case Choice: return std::string(choice_word(info.choices, get_int(id)));
  }
  return std::string();
}

bool Settings::get_bool(SettingId id) const noexcept { return numbers_[index(id)].load(std::memory_order_relaxed) != 0; }

int64_t Settings::get_int(SettingId id) const noexcept { return numbers_[index(id)].load(std::memory_order_relaxed); }

std::string Settings::get_string(SettingId id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return strings_[index(id)];
}

Settings& process_settings() {
  // Never destroyed: settings are read by work that may run during exit.
  static Settings* settings = new Settings();
  return *settings;
}

}  // namespace kiln
