// The one explicit list of execution backends compiled into this build.
#include "aoti/aoti_backend.h"
#include "runtime/backend.h"

namespace kiln {

void register_builtin_backends() { register_backend(&aoti::AotiBackend::instance()); }

}  // namespace kiln
