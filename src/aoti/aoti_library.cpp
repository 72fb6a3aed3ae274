#include "aoti/aoti_library.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "aoti/elf_symbols.h"
#include "core/settings.h"
#include "program/sealed_file.h"
#include "program/write_all.h"
#include "kiln/log.h"

namespace kiln::aoti {
namespace {

// STB_GNU_UNIQUE symbols would pin the library in memory for good (glibc
// never unloads an object that defines one); they are made plain globals.
void patch_unique_bindings(std::vector<uint8_t>& image, const DynamicSymbols& symbols) {
  for (uint64_t offset : symbols.unique_binding_offsets) {
    if (offset >= image.size()) continue;  // read_dynamic_symbols bounds every offset
    uint8_t& info = image[static_cast<size_t>(offset)];
    info = static_cast<uint8_t>(ELF64_ST_INFO(STB_GLOBAL, ELF64_ST_TYPE(info)));
  }
}

// Kiln exports every shim as kiln_torch_<rest> instead of aoti_torch_<rest>
// (cmake/KilnShimNames.cmake says why); the loader renames the imports of its
// private copy to match. Same length, so no offset in the library moves.
constexpr std::string_view kTorchShimPrefix = "aoti_torch_";
constexpr std::string_view kKilnShimPrefix = "kiln_torch_";
static_assert(kTorchShimPrefix.size() == kKilnShimPrefix.size());

std::string exported_shim_name(const std::string& import) {
  return std::string(kKilnShimPrefix) + import.substr(kTorchShimPrefix.size());
}

// The CUDA driver calls that load kernel modules, which AOTInductor's wrapper
// never unloads: renamed to the CUDA plugin's knModuleLoad* wrappers ("cu" ->
// "kn"), which record each module so it is unloaded with the method
// (src/devices/cuda/kernel_modules.h).
constexpr std::string_view kModuleLoadImports[] = {"cuModuleLoad", "cuModuleLoadData"};
constexpr std::string_view kKilnModuleLoadPrefix = "kn";

void rename_shim_imports(std::vector<uint8_t>& image, const DynamicSymbols& symbols) {
  for (size_t i = 0; i < symbols.undefined.size(); ++i) {
    const std::string& name = symbols.undefined[i];
    const auto offset = static_cast<size_t>(symbols.undefined_name_offsets[i]);
    std::string_view replacement;  // written over the start of the name
    if (name.rfind(kTorchShimPrefix, 0) == 0) {
      replacement = kKilnShimPrefix.substr(0, 4);  // only "aoti" -> "kiln" changes
    } else {
      for (std::string_view load : kModuleLoadImports)
        if (name == load) replacement = kKilnModuleLoadPrefix;
    }
    if (replacement.empty() || offset > image.size() || replacement.size() > image.size() - offset) continue;
    std::copy(replacement.begin(), replacement.end(), image.begin() + static_cast<std::ptrdiff_t>(offset));
  }
}

// The bytes dlopen is given: the checked library with the loader's two
// patches applied in memory, so one image is written, sealed and compared.
std::vector<uint8_t> patched_image(std::span<const uint8_t> bytes, const DynamicSymbols& symbols) {
  std::vector<uint8_t> image(bytes.begin(), bytes.end());
  patch_unique_bindings(image, symbols);
  rename_shim_imports(image, symbols);
  return image;
}

Result<void*> dlopen_path(const std::string& path, std::string_view label) {
  dlerror();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return set_error(Error::BackendFailed,
                     std::string(label) + ": loading the model library failed: " + (why ? why : "unknown error"));
  }
  return handle;
}

// Private temporary file: 0700 directory, O_EXCL file, both removed before
// returning on every path.
Result<void*> load_through_temp_file(std::span<const uint8_t> image, std::string_view label) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir_template = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln-XXXXXX";
  std::vector<char> dir(dir_template.begin(), dir_template.end());
  dir.push_back('\0');
  if (!::mkdtemp(dir.data()))  // mkdtemp creates it 0700
    return set_error(Error::IoError, std::string("creating a private temporary directory: ") + std::strerror(errno));
  const std::string dir_path(dir.data());
  const std::string file_path = dir_path + "/model.so";
  struct Cleanup {
    const std::string& file;
    const std::string& dir;
    ~Cleanup() {
      ::unlink(file.c_str());
      ::rmdir(dir.c_str());
    }
  } cleanup{file_path, dir_path};
  // O_EXCL | O_NOFOLLOW: never reuse or follow anything already at that name.
  int fd = ::open(file_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0700);
  if (fd < 0) return set_error(Error::IoError, "creating " + file_path + ": " + std::strerror(errno));
  const int err = write_all(fd, image);
  ::close(fd);
  if (err != 0) return set_error(Error::IoError, "writing " + file_path + ": " + std::strerror(err));
  return dlopen_path(file_path, label);
}

// Vectorised CPU kernels call SLEEF's math functions (Sleef_expf16_u10, ...),
// which libtorch contains. Kiln takes them from a SLEEF library made global
// the first time a model needs it: the sleef_library setting, else a copy
// beside libkiln.so (the Python wheel bundles one, so programs run where the
// system has no libsleef3), else the system's libsleef.so.3.
constexpr const char* kSleefPrefix = "Sleef_";
constexpr const char* kSleefSoname = "libsleef.so.3";

// The libsleef.so.3 in libkiln.so's own directory, or "" when there is none
// (or this code is linked into an executable: libkiln_static).
std::string bundled_sleef() {
  Dl_info info{};
  if (!::dladdr(reinterpret_cast<void*>(&bundled_sleef), &info) || !info.dli_fname) return "";
  const std::string self = info.dli_fname;
  const size_t slash = self.rfind('/');
  if (slash == std::string::npos || self.compare(slash + 1, 10, "libkiln.so") != 0) return "";
  std::string candidate = self.substr(0, slash + 1) + kSleefSoname;
  return ::access(candidate.c_str(), R_OK) == 0 ? candidate : "";
}

Error provide_sleef(const DynamicSymbols& symbols, std::string_view label) {
  std::string unresolved;
  size_t count = 0;
  for (const std::string& name : symbols.undefined)
    if (name.rfind(kSleefPrefix, 0) == 0 && !::dlsym(RTLD_DEFAULT, name.c_str()))
      unresolved += (count++ ? ", " : "") + name;
  if (count == 0) return Error::Ok;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::string library = process_settings().get_string(SettingId::SleefLibrary);
  if (library.empty()) library = bundled_sleef();
  if (library.empty()) library = kSleefSoname;
  KILN_LOG(Debug, "opening SLEEF: " + library);
  // RTLD_GLOBAL: the model library resolves these through the global scope.
  if (!::dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* why = dlerror();
    return set_error(Error::MissingShim,
                     std::string(label) + ": the model's vectorised CPU kernels need SLEEF (" + unresolved +
                         ") but " + library + " could not be opened: " + (why ? why : "unknown error") +
                         ". Install SLEEF (Debian/Ubuntu: apt-get install libsleef3) or set setting sleef_library "
                         "(KILN_SLEEF_LIBRARY).");
  }
  for (const std::string& name : symbols.undefined)
    if (name.rfind(kSleefPrefix, 0) == 0 && !::dlsym(RTLD_DEFAULT, name.c_str()))
      return set_error(Error::MissingShim, std::string(label) + ": " + library + " has no " + name +
                                               " (the model was compiled against a newer SLEEF)");
  return Error::Ok;
}

// The shims are found with dlsym(RTLD_DEFAULT); a library that imports a name
// this process cannot resolve would otherwise fail inside dlopen one symbol
// at a time, or (lazy binding) crash on first call.
Error check_shim_imports(const DynamicSymbols& symbols, std::string_view label) {
  std::string missing;
  size_t count = 0;
  for (const std::string& name : symbols.undefined) {
    if (name.rfind(kTorchShimPrefix, 0) != 0) continue;
    if (::dlsym(RTLD_DEFAULT, exported_shim_name(name).c_str())) continue;
    missing += (count++ ? ", " : "") + name;
  }
  if (count == 0) return Error::Ok;
  return set_error(Error::MissingShim, std::string(label) + ": the model library imports " + std::to_string(count) +
                                           " shim function(s) this Kiln runtime does not implement: " + missing +
                                           ". Re-export with a backend whose supported-kernel list matches this "
                                           "runtime, or upgrade Kiln.");
}

// Loads the library's dependencies on their own, before the library. If a
// dependency such as libstdc++ were first loaded together with the model, its
// relocations could bind to definitions in the model (which comes first in
// that dlopen's local scope); libstdc++ is never unloaded, so the model would
// be pinned in memory for good. Loaded alone, the dependency binds to itself.
// The handles are kept: these are system libraries every later load needs.
void preload_dependencies(const DynamicSymbols& symbols) {
  static std::mutex mutex;
  static std::vector<std::string> done;
  std::lock_guard<std::mutex> lock(mutex);
  for (const std::string& name : symbols.needed) {
    if (std::find(done.begin(), done.end(), name) != done.end()) continue;
    if (!::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      const char* why = dlerror();  // reported again, in context, by the model's own dlopen
      KILN_LOG(Debug, "preloading " + name + " failed: " + (why ? why : "unknown"));
      continue;
    }
    done.push_back(name);
  }
}

}  // namespace

void export_runtime_symbols_globally() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info{};
    if (!::dladdr(reinterpret_cast<void*>(&export_runtime_symbols_globally), &info) || !info.dli_fname) return;
    // Re-opening an already loaded object with RTLD_GLOBAL promotes its
    // symbols into the global scope. For the main executable this is a
    // no-op (its exported symbols are already global).
    void* self = ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    if (!self) {
      KILN_LOG(Debug, std::string("could not re-open ") + info.dli_fname + " RTLD_GLOBAL (fine for executables)");
      return;
    }
    // Keep the reference: the runtime must stay loaded while models use it.
  });
}

Result<std::unique_ptr<AotiLibrary>> AotiLibrary::load(std::span<const uint8_t> bytes, std::string_view label) {
  export_runtime_symbols_globally();
  KILN_ASSIGN_OR_RETURN(DynamicSymbols symbols, read_dynamic_symbols(bytes));
  KILN_RETURN_IF_ERROR(check_shim_imports(symbols, label));
  KILN_RETURN_IF_ERROR(provide_sleef(symbols, label));
  preload_dependencies(symbols);

  const std::string what = std::string(label) + " library";
  const std::vector<uint8_t> image = patched_image(bytes, symbols);
  // Sealed before dlopen and compared with the image: from here on nothing,
  // in this process or another that reaches the descriptor, can change the
  // bytes the dynamic loader maps. Setting disable_memfd takes the fallback
  // path on purpose, so it can be tested on systems that have memfd.
  auto sealed = SealedFile::create(image, "kiln-model", what);
  if (sealed.error() == Error::NotSupported) {
    KILN_LOG(Info, "no sealed in-memory file (" + last_error_message() + "); loading through a private temporary file");
    KILN_ASSIGN_OR_RETURN(void* handle, load_through_temp_file(image, label));
    return std::unique_ptr<AotiLibrary>(new AotiLibrary(handle, -1));
  }
  if (!sealed.ok()) return sealed.error();
  KILN_ASSIGN_OR_RETURN(void* handle, dlopen_path(sealed->path(), label));
  return std::unique_ptr<AotiLibrary>(new AotiLibrary(handle, sealed->release()));
}

namespace {

// A library linked with its own static copy of libstdc++ (AOTInductor's CUDA
// libraries built by g++ 13 on Ubuntu 24.04 are) has its own exception
// emergency pool: a static constructor mallocs it (72 KiB) at dlopen, and
// libstdc++ frees it only through __gnu_cxx::__freeres, which nothing calls
// for a library, so every load/unload cycle kept 72 KiB. Call the library's
// own copy; dlsym on the handle also searches its dependencies, and the
// process's shared libstdc++ pool must be left alone, so only a definition
// inside the library itself counts.
void free_private_libstdcxx_pool(void* handle, const void* library_base) {
  void* freeres = ::dlsym(handle, "_ZN9__gnu_cxx9__freeresEv");
  Dl_info info{};
  if (!freeres || !library_base || ::dladdr(freeres, &info) == 0 || info.dli_fbase != library_base) return;
  reinterpret_cast<void (*)()>(freeres)();
}

}  // namespace

AotiLibrary::~AotiLibrary() {
  if (handle_) {
    free_private_libstdcxx_pool(handle_, base());
    ::dlclose(handle_);
  }
  if (fd_ >= 0) ::close(fd_);
}

void* AotiLibrary::symbol(const char* name) const noexcept { return ::dlsym(handle_, name); }

const void* AotiLibrary::base() const noexcept {
  // Every AOTInductor library defines its container entry points.
  void* entry = symbol("AOTInductorModelContainerCreateWithDevice");
  Dl_info info{};
  if (entry == nullptr || ::dladdr(entry, &info) == 0) return nullptr;
  return info.dli_fbase;
}

}  // namespace kiln::aoti
