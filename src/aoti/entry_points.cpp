#include "aoti/entry_points.h"

#include <string>

namespace kiln::aoti {
namespace {
template <typename Fn>
bool lookup(const AotiLibrary& library, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(library.symbol(name));
  return *out != nullptr;
}
}  // namespace

Result<EntryPoints> EntryPoints::resolve(const AotiLibrary& library) {
  EntryPoints e;
  struct Required {
    const char* name;
    bool found;
  };
  const Required required[] = {
      {"AOTInductorModelContainerCreateWithDevice", lookup(library, "AOTInductorModelContainerCreateWithDevice", &e.create_with_device)},
      {"AOTInductorModelContainerDelete", lookup(library, "AOTInductorModelContainerDelete", &e.destroy)},
      {"AOTInductorModelContainerRun", lookup(library, "AOTInductorModelContainerRun", &e.run)},
      {"AOTInductorModelContainerGetNumInputs", lookup(library, "AOTInductorModelContainerGetNumInputs", &e.get_num_inputs)},
      {"AOTInductorModelContainerGetNumOutputs", lookup(library, "AOTInductorModelContainerGetNumOutputs", &e.get_num_outputs)},
  };
  for (const Required& r : required)
    if (!r.found)
      return set_error(Error::BackendFailed, std::string("model library does not export the required entry point ") +
                                                 r.name + "; it was not built by AOTInductor for torch >= 2.6");
  lookup(library, "AOTInductorModelContainerRunSingleThreaded", &e.run_single_threaded);
  lookup(library, "AOTInductorModelContainerGetConstantsBlobSize", &e.get_constants_blob_size);
  lookup(library, "AOTInductorModelUpdateConstantsFromBlob", &e.update_constants_from_blob);
  lookup(library, "AOTInductorModelContainerGetNumConstants", &e.get_num_constants);
  lookup(library, "AOTInductorModelContainerGetCallSpec", &e.get_call_spec);
  lookup(library, "AOTInductorModelContainerUpdateUserManagedConstantBufferPairs",
         &e.update_user_managed_constant_buffer_pairs);
  return e;
}

}  // namespace kiln::aoti
