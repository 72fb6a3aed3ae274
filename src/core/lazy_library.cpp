#include "core/lazy_library.h"

#include <dlfcn.h>

#include "kiln/log.h"

namespace kiln {

LazyLibrary::LazyLibrary(std::string what, SettingId path, std::vector<std::string> sonames,
                         std::vector<std::string> required, std::string hint)
    : what_(std::move(what)),
      path_(path),
      sonames_(std::move(sonames)),
      required_(std::move(required)),
      hint_(std::move(hint)) {}

Result<void*> LazyLibrary::handle() {
  std::call_once(once_, [this] {
    std::vector<std::string> tried;
    std::vector<std::string> candidates;
    if (std::string path = process_settings().get_string(path_); !path.empty()) candidates.push_back(path);
    candidates.insert(candidates.end(), sonames_.begin(), sonames_.end());
    for (const std::string& name : candidates) {
      void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) {
        const char* why = dlerror();
        tried.push_back(name + " (" + (why ? why : "unknown error") + ")");
        continue;
      }
      std::string lacking;
      for (const std::string& symbol : required_)
        if (dlsym(h, symbol.c_str()) == nullptr) lacking += (lacking.empty() ? "" : ", ") + symbol;
      if (!lacking.empty()) {
        tried.push_back(name + " (has no " + lacking + ")");
        dlclose(h);
        continue;
      }
      handle_ = h;
      KILN_LOG(Info, what_ + " loaded from " + name);
      return;
    }
    const SettingInfo& setting = setting_info(path_);
    failure_ = what_ + " is needed by this model but could not be loaded; tried: ";
    for (size_t i = 0; i < tried.size(); ++i) failure_ += (i ? "; " : "") + tried[i];
    failure_ += ". " + (hint_.empty() ? std::string("Install it or put its directory on LD_LIBRARY_PATH") : hint_) +
                ", or set setting '" + std::string(setting.name) + "' (" + setting_environment_variable(setting) +
                ") to its path.";
  });
  if (handle_ == nullptr) return set_error(Error::NotSupported, failure_);
  return handle_;
}

Result<void*> LazyLibrary::symbol(const char* name) {
  KILN_ASSIGN_OR_RETURN(void* h, handle());
  void* p = dlsym(h, name);
  if (p == nullptr) return set_error(Error::NotFound, what_ + " lacks the function " + name + " (wrong version?)");
  return p;
}

void* LazyLibrary::optional_symbol(const char* name) noexcept {
  auto h = handle();
  return h.ok() ? dlsym(*h, name) : nullptr;
}

}  // namespace kiln
