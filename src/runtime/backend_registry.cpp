#include <mutex>

#include "runtime/backend.h"

namespace kiln {
namespace {
std::vector<Backend*>& registry() {
  static std::vector<Backend*> backends;
  return backends;
}
void ensure_registered() {
  static std::once_flag once;
  std::call_once(once, register_builtin_backends);
}
}  // namespace

void register_backend(Backend* backend) { registry().push_back(backend); }

Backend* find_backend(std::string_view name) {
  ensure_registered();
  for (Backend* backend : registry())
    if (backend->name() == name) return backend;
  return nullptr;
}

std::vector<std::string_view> backend_names() {
  ensure_registered();
  std::vector<std::string_view> names;
  for (Backend* backend : registry()) names.push_back(backend->name());
  return names;
}

}  // namespace kiln
