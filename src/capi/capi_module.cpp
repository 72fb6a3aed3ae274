// kiln_module_t and kiln_method_meta_t: the C face of kiln::Module.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capi/capi_internal.h"

namespace {

using kiln::Error;

Error index_out_of_range(const char* fn, const char* what, size_t index, size_t count) {
  return kiln::set_error(Error::InvalidArgument, std::string(fn) + ": " + what + " index " + std::to_string(index) +
                                                     " out of range (count " + std::to_string(count) + ")");
}

Error check_dim(const char* fn, const kiln_tensor_spec_t* spec, size_t d) {
  if (d >= spec->spec.dims.size()) {
    return kiln::set_error(Error::InvalidArgument,
                           std::string(fn) + ": dimension " + std::to_string(d) + " out of range for '" +
                               spec->spec.name + "' of rank " + std::to_string(spec->spec.dims.size()));
  }
  return Error::Ok;
}

std::unique_ptr<kiln_method_meta_t> make_meta(kiln::MethodInfo info) {
  auto meta = std::make_unique<kiln_method_meta_t>();
  for (const auto& spec : info.inputs) meta->inputs.push_back(kiln_tensor_spec_t{spec});
  for (const auto& spec : info.outputs) meta->outputs.push_back(kiln_tensor_spec_t{spec});
  meta->metadata.assign(info.metadata.begin(), info.metadata.end());
  meta->info = std::move(info);
  return meta;
}

}  // namespace

extern "C" {

// ---- modules ---------------------------------------------------------------

kiln_status_t kiln_module_create(const char* path, const char* const* data_files, size_t n_data_files,
                                 kiln_module_t** out) noexcept {
  return kiln_module_create_with_runtime(nullptr, path, data_files, n_data_files, out);
}

kiln_status_t kiln_module_create_with_runtime(kiln_runtime_t* runtime, const char* path,
                                              const char* const* data_files, size_t n_data_files,
                                              kiln_module_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(path);
    KILN_CAPI_REQUIRE(out);
    if (n_data_files > 0) KILN_CAPI_REQUIRE(data_files);
    std::vector<std::string> files;
    files.reserve(n_data_files);
    for (size_t i = 0; i < n_data_files; ++i) {
      if (data_files[i] == nullptr)
        return kiln::set_error(Error::InvalidArgument,
                               std::string(fn) + ": data_files[" + std::to_string(i) + "] is NULL");
      files.emplace_back(data_files[i]);
    }
    auto owner = runtime ? runtime->runtime : kiln::Runtime::default_runtime();
    *out = new kiln_module_t(std::make_unique<kiln::Module>(std::move(owner), path, std::move(files)));
    return Error::Ok;
  });
}

kiln_status_t kiln_module_create_from_buffer(kiln_runtime_t* runtime, const void* data, size_t size,
                                             kiln_module_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(out);
    if (size > 0) KILN_CAPI_REQUIRE(data);
    auto owner = runtime ? runtime->runtime : kiln::Runtime::default_runtime();
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<kiln::Module> module,
                          kiln::Module::from_bytes(std::move(owner), {static_cast<const uint8_t*>(data), size}));
    *out = new kiln_module_t(std::move(module));
    return Error::Ok;
  });
}

kiln_status_t kiln_module_load(kiln_module_t* module, const kiln_options_t* options) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(module);
    static const kiln::LoadBackendOptionsMap kNoOptions;
    return module->module->load(options ? options->map : kNoOptions);
  });
}

kiln_status_t kiln_module_load_method(kiln_module_t* module, const char* name,
                                      const kiln_options_t* options) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(module);
    KILN_CAPI_REQUIRE(name);
    return module->module->load_method(name, options ? &options->map : nullptr);
  });
}

kiln_status_t kiln_module_unload_method(kiln_module_t* module, const char* name) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(module);
    KILN_CAPI_REQUIRE(name);
    return module->module->unload_method(name);
  });
}

kiln_status_t kiln_module_is_method_loaded(const kiln_module_t* module, const char* name, bool* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(module);
    KILN_CAPI_REQUIRE(name);
    KILN_CAPI_REQUIRE(out);
    *out = module->module->is_method_loaded(name);
    return Error::Ok;
  });
}

kiln_status_t kiln_module_method_count(kiln_module_t* module, size_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(module);
    KILN_CAPI_REQUIRE(out);
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> names, module->module->method_names());
    *out = names.size();
    return Error::Ok;
  });
}

kiln_status_t kiln_module_method_name(kiln_module_t* module, size_t index, const char** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(module);
    KILN_CAPI_REQUIRE(out);
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> names, module->module->method_names());
    if (index >= names.size()) return index_out_of_range(fn, "method", index, names.size());
    std::lock_guard<std::mutex> lock(module->names_mutex);
    auto it = module->interned_names.insert(std::move(names[index])).first;
    *out = it->c_str();
    return Error::Ok;
  });
}

kiln_status_t kiln_module_method_meta(kiln_module_t* module, const char* name, kiln_method_meta_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(module);
    KILN_CAPI_REQUIRE(name);
    KILN_CAPI_REQUIRE(out);
    KILN_ASSIGN_OR_RETURN(kiln::MethodInfo info, module->module->method_meta(name));
    *out = make_meta(std::move(info)).release();
    return Error::Ok;
  });
}

kiln_status_t kiln_module_execute(kiln_module_t* module, const char* name, kiln_tensor_t* const* inputs,
                                  size_t n_inputs, kiln_tensor_t*** outputs, size_t* n_outputs) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(module);
    KILN_CAPI_REQUIRE(name);
    KILN_CAPI_REQUIRE(outputs);
    KILN_CAPI_REQUIRE(n_outputs);
    if (n_inputs > 0) KILN_CAPI_REQUIRE(inputs);
    std::vector<kiln::Tensor> input_tensors;
    input_tensors.reserve(n_inputs);
    for (size_t i = 0; i < n_inputs; ++i) {
      if (inputs[i] == nullptr)
        return kiln::set_error(Error::InvalidArgument, std::string(fn) + ": inputs[" + std::to_string(i) +
                                                           "] is NULL (method '" + name + "')");
      input_tensors.push_back(inputs[i]->tensor);
    }
    KILN_ASSIGN_OR_RETURN(std::vector<kiln::Tensor> results, module->module->execute(name, input_tensors));

    // Build every handle before publishing any, so a failure leaks nothing.
    std::vector<std::unique_ptr<kiln_tensor_t>> handles;
    handles.reserve(results.size());
    for (auto& result : results) handles.push_back(std::make_unique<kiln_tensor_t>(kiln_tensor_t{std::move(result)}));
    kiln_tensor_t** array = nullptr;
    if (!handles.empty()) {
      array = new kiln_tensor_t*[handles.size()];
      for (size_t i = 0; i < handles.size(); ++i) array[i] = handles[i].release();
    }
    *outputs = array;
    *n_outputs = handles.size();
    return Error::Ok;
  });
}

void kiln_module_free(kiln_module_t* module) noexcept { delete module; }

// ---- method metadata ---------------------------------------------------------

kiln_status_t kiln_method_meta_name(const kiln_method_meta_t* meta, const char** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(meta);
    KILN_CAPI_REQUIRE(out);
    *out = meta->info.name.c_str();
    return Error::Ok;
  });
}

kiln_status_t kiln_method_meta_backend(const kiln_method_meta_t* meta, const char** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(meta);
    KILN_CAPI_REQUIRE(out);
    *out = meta->info.backend.c_str();
    return Error::Ok;
  });
}

kiln_status_t kiln_method_meta_device(const kiln_method_meta_t* meta, const char** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(meta);
    KILN_CAPI_REQUIRE(out);
    *out = meta->info.device.c_str();
    return Error::Ok;
  });
}

kiln_status_t kiln_method_meta_input_count(const kiln_method_meta_t* meta, size_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(meta);
    KILN_CAPI_REQUIRE(out);
    *out = meta->inputs.size();
    return Error::Ok;
  });
}

kiln_status_t kiln_method_meta_output_count(const kiln_method_meta_t* meta, size_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(meta);
    KILN_CAPI_REQUIRE(out);
    *out = meta->outputs.size();
    return Error::Ok;
  });
}

kiln_status_t kiln_method_meta_input(const kiln_method_meta_t* meta, size_t index,
                                     const kiln_tensor_spec_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(meta);
    KILN_CAPI_REQUIRE(out);
    if (index >= meta->inputs.size()) return index_out_of_range(fn, "input", index, meta->inputs.size());
    *out = &meta->inputs[index];
    return Error::Ok;
  });
}

kiln_status_t kiln_method_meta_output(const kiln_method_meta_t* meta, size_t index,
                                      const kiln_tensor_spec_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(meta);
    KILN_CAPI_REQUIRE(out);
    if (index >= meta->outputs.size()) return index_out_of_range(fn, "output", index, meta->outputs.size());
    *out = &meta->outputs[index];
    return Error::Ok;
  });
}

kiln_status_t kiln_method_meta_metadata_count(const kiln_method_meta_t* meta, size_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(meta);
    KILN_CAPI_REQUIRE(out);
    *out = meta->metadata.size();
    return Error::Ok;
  });
}

kiln_status_t kiln_method_meta_metadata_entry(const kiln_method_meta_t* meta, size_t index, const char** out_key,
                                              const char** out_value) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(meta);
    KILN_CAPI_REQUIRE(out_key);
    KILN_CAPI_REQUIRE(out_value);
    if (index >= meta->metadata.size()) return index_out_of_range(fn, "metadata", index, meta->metadata.size());
    *out_key = meta->metadata[index].first.c_str();
    *out_value = meta->metadata[index].second.c_str();
    return Error::Ok;
  });
}

kiln_status_t kiln_method_meta_metadata_get(const kiln_method_meta_t* meta, const char* key,
                                            const char** out_value) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(meta);
    KILN_CAPI_REQUIRE(key);
    KILN_CAPI_REQUIRE(out_value);
    auto it = meta->info.metadata.find(key);
    if (it == meta->info.metadata.end())
      return kiln::set_error(Error::NotFound, std::string(fn) + ": method '" + meta->info.name +
                                                  "' has no metadata key '" + key + "'");
    *out_value = it->second.c_str();
    return Error::Ok;
  });
}

void kiln_method_meta_free(kiln_method_meta_t* meta) noexcept { delete meta; }

// ---- tensor specs -------------------------------------------------------------

kiln_status_t kiln_tensor_spec_name(const kiln_tensor_spec_t* spec, const char** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(spec);
    KILN_CAPI_REQUIRE(out);
    *out = spec->spec.name.c_str();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_spec_dtype(const kiln_tensor_spec_t* spec, kiln_dtype_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(spec);
    KILN_CAPI_REQUIRE(out);
    *out = static_cast<kiln_dtype_t>(spec->spec.dtype);
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_spec_dim(const kiln_tensor_spec_t* spec, size_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(spec);
    KILN_CAPI_REQUIRE(out);
    *out = spec->spec.dims.size();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_spec_dim_size(const kiln_tensor_spec_t* spec, size_t d, int64_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(spec);
    KILN_CAPI_REQUIRE(out);
    KILN_RETURN_IF_ERROR(check_dim(fn, spec, d));
    *out = spec->spec.dims[d].size;
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_spec_dim_is_dynamic(const kiln_tensor_spec_t* spec, size_t d, bool* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(spec);
    KILN_CAPI_REQUIRE(out);
    KILN_RETURN_IF_ERROR(check_dim(fn, spec, d));
    *out = spec->spec.dims[d].dynamic;
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_spec_dim_bounds(const kiln_tensor_spec_t* spec, size_t d, int64_t* out_min,
                                          int64_t* out_max) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(spec);
    KILN_CAPI_REQUIRE(out_min);
    KILN_CAPI_REQUIRE(out_max);
    KILN_RETURN_IF_ERROR(check_dim(fn, spec, d));
    const kiln::DimSpec& dim = spec->spec.dims[d];
    *out_min = dim.dynamic ? dim.min : dim.size;
    *out_max = dim.dynamic ? dim.max : dim.size;
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_spec_dim_name(const kiln_tensor_spec_t* spec, size_t d, const char** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(spec);
    KILN_CAPI_REQUIRE(out);
    KILN_RETURN_IF_ERROR(check_dim(fn, spec, d));
    *out = spec->spec.dims[d].name.c_str();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_spec_dim_order(const kiln_tensor_spec_t* spec, size_t k, size_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(spec);
    KILN_CAPI_REQUIRE(out);
    KILN_RETURN_IF_ERROR(check_dim(fn, spec, k));
    // ProgramFile guarantees an empty order or a permutation of the dims.
    *out = spec->spec.dim_order.empty() ? k : spec->spec.dim_order[k];
    return Error::Ok;
  });
}

}  // extern "C"
