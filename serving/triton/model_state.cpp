#include "model_state.h"

#include <sys/stat.h>

#include <memory>

#include "errors.h"

namespace kiln::triton {

namespace {

// Without a max_batch_size in the configuration, a method whose batch dim is
// dynamic and unbounded is served with this one; a bounded one with its bound
// when smaller.
constexpr int64_t kDefaultMaxBatchSize = 64;

struct DtypePair {
  kiln_dtype_t kiln;
  TRITONSERVER_DataType triton;
  const char* config;
};

constexpr DtypePair kDtypes[] = {
    {KILN_DTYPE_BOOL, TRITONSERVER_TYPE_BOOL, "TYPE_BOOL"},
    {KILN_DTYPE_UINT8, TRITONSERVER_TYPE_UINT8, "TYPE_UINT8"},
    {KILN_DTYPE_UINT16, TRITONSERVER_TYPE_UINT16, "TYPE_UINT16"},
    {KILN_DTYPE_UINT32, TRITONSERVER_TYPE_UINT32, "TYPE_UINT32"},
    {KILN_DTYPE_UINT64, TRITONSERVER_TYPE_UINT64, "TYPE_UINT64"},
    {KILN_DTYPE_INT8, TRITONSERVER_TYPE_INT8, "TYPE_INT8"},
    {KILN_DTYPE_INT16, TRITONSERVER_TYPE_INT16, "TYPE_INT16"},
    {KILN_DTYPE_INT32, TRITONSERVER_TYPE_INT32, "TYPE_INT32"},
    {KILN_DTYPE_INT64, TRITONSERVER_TYPE_INT64, "TYPE_INT64"},
    {KILN_DTYPE_FLOAT16, TRITONSERVER_TYPE_FP16, "TYPE_FP16"},
    {KILN_DTYPE_FLOAT32, TRITONSERVER_TYPE_FP32, "TYPE_FP32"},
    {KILN_DTYPE_FLOAT64, TRITONSERVER_TYPE_FP64, "TYPE_FP64"},
    {KILN_DTYPE_BFLOAT16, TRITONSERVER_TYPE_BF16, "TYPE_BF16"},
};

bool is_file(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

using ModulePtr = std::unique_ptr<kiln_module_t, void (*)(kiln_module_t*)>;
using MetaPtr = std::unique_ptr<kiln_method_meta_t, void (*)(kiln_method_meta_t*)>;
using OptionsPtr = std::unique_ptr<kiln_options_t, void (*)(kiln_options_t*)>;

TRITONSERVER_Error* read_spec(const kiln_tensor_spec_t* spec, const std::string& fallback_name, TensorInfo* out) {
  const char* name = nullptr;
  KILN_TRITON_CALL(kiln_tensor_spec_name(spec, &name), "reading the method contract");
  out->name = (name && *name) ? name : fallback_name;
  KILN_TRITON_CALL(kiln_tensor_spec_dtype(spec, &out->dtype), "reading the method contract");
  out->triton_dtype = triton_dtype(out->dtype);
  size_t dim = 0;
  KILN_TRITON_CALL(kiln_tensor_spec_dim(spec, &dim), "reading the method contract");
  for (size_t d = 0; d < dim; ++d) {
    int64_t size = 0, lo = 0, hi = 0;
    bool dynamic = false;
    KILN_TRITON_CALL(kiln_tensor_spec_dim_size(spec, d, &size), "reading the method contract");
    KILN_TRITON_CALL(kiln_tensor_spec_dim_is_dynamic(spec, d, &dynamic), "reading the method contract");
    KILN_TRITON_CALL(kiln_tensor_spec_dim_bounds(spec, d, &lo, &hi), "reading the method contract");
    out->sizes.push_back(size);
    out->dynamic.push_back(dynamic);
    out->max.push_back(hi);
  }
  return nullptr;
}

// The dims Triton's configuration shows for `t`: -1 for a dynamic dim, and
// without dim 0 when Triton batches. Triton refuses empty dims, so a tensor
// that is only the batch dim is configured as [1] reshaped to [] (what
// needs_reshape says), Triton's way of saying "one value per batch item".
Json config_dims(const TensorInfo& t, bool batched) {
  Json dims = Json::array();
  for (size_t d = batched ? 1 : 0; d < t.sizes.size(); ++d) dims.push_back(Json::number(t.dynamic[d] ? -1 : t.sizes[d]));
  if (dims.size() == 0) dims.push_back(Json::number(1));
  return dims;
}

bool needs_reshape(const TensorInfo& t, bool batched) { return t.sizes.size() == (batched ? 1u : 0u); }

}  // namespace

TRITONSERVER_DataType triton_dtype(kiln_dtype_t dtype) {
  for (const DtypePair& p : kDtypes)
    if (p.kiln == dtype) return p.triton;
  return TRITONSERVER_TYPE_INVALID;
}

const char* config_dtype_name(TRITONSERVER_DataType dtype) {
  for (const DtypePair& p : kDtypes)
    if (p.triton == dtype) return p.config;
  return "TYPE_INVALID";
}

ModelState::~ModelState() = default;

bool ModelState::batchable(int64_t* bound) const {
  int64_t b = -1;
  if (inputs_.empty()) return false;
  for (const auto* list : {&inputs_, &outputs_}) {
    for (const TensorInfo& t : *list) {
      if (t.sizes.empty() || !t.dynamic[0]) return false;
      if (t.max[0] >= 0 && (b < 0 || t.max[0] < b)) b = t.max[0];
    }
  }
  *bound = b;
  return true;
}

TRITONSERVER_Error* ModelState::read_contract(kiln_module_t* module) {
  size_t count = 0;
  KILN_TRITON_CALL(kiln_module_method_count(module, &count), "reading " + program_path_);
  if (method_.empty()) {
    // The program's only method, else the conventional "forward".
    if (count == 1) {
      const char* only = nullptr;
      KILN_TRITON_CALL(kiln_module_method_name(module, 0, &only), "reading " + program_path_);
      method_ = only;
    } else {
      method_ = "forward";
    }
  }
  kiln_method_meta_t* raw_meta = nullptr;
  KILN_TRITON_CALL(kiln_module_method_meta(module, method_.c_str(), &raw_meta),
                   "model '" + name_ + "': method '" + method_ + "' of " + program_path_);
  MetaPtr meta(raw_meta, kiln_method_meta_free);
  const char* device = nullptr;
  KILN_TRITON_CALL(kiln_method_meta_device(meta.get(), &device), "reading the method contract");
  method_device_ = device;
  size_t n_in = 0, n_out = 0;
  KILN_TRITON_CALL(kiln_method_meta_input_count(meta.get(), &n_in), "reading the method contract");
  KILN_TRITON_CALL(kiln_method_meta_output_count(meta.get(), &n_out), "reading the method contract");
  for (size_t i = 0; i < n_in; ++i) {
    const kiln_tensor_spec_t* spec = nullptr;
    KILN_TRITON_CALL(kiln_method_meta_input(meta.get(), i, &spec), "reading the method contract");
    TensorInfo t;
    KILN_TRITON_RETURN_IF_ERROR(read_spec(spec, "INPUT__" + std::to_string(i), &t));
    inputs_.push_back(std::move(t));
  }
  for (size_t i = 0; i < n_out; ++i) {
    const kiln_tensor_spec_t* spec = nullptr;
    KILN_TRITON_CALL(kiln_method_meta_output(meta.get(), i, &spec), "reading the method contract");
    TensorInfo t;
    KILN_TRITON_RETURN_IF_ERROR(read_spec(spec, "OUTPUT__" + std::to_string(i), &t));
    outputs_.push_back(std::move(t));
  }
  for (const auto* list : {&inputs_, &outputs_}) {
    for (const TensorInfo& t : *list) {
      if (t.triton_dtype == TRITONSERVER_TYPE_INVALID) {
        return error(TRITONSERVER_ERROR_UNSUPPORTED, "model '" + name_ + "': '" + t.name + "' has dtype " +
                                                         kiln_dtype_name(t.dtype) + ", which Triton has no type for");
      }
    }
  }
  return nullptr;
}

TRITONSERVER_Error* ModelState::auto_complete(TRITONBACKEND_Model* model, Json* config) {
  // Inputs and outputs the configuration leaves out are taken from the program.
  // max_batch_size is only chosen when the inputs are: a configuration that
  // lists its inputs is taken as written, max_batch_size 0 (no batching)
  // included.
  const Json* in = config->find("input");
  const Json* out = config->find("output");
  bool fill_inputs = in == nullptr || in->size() == 0;
  bool fill_outputs = out == nullptr || out->size() == 0;
  if (!fill_inputs && !fill_outputs) return nullptr;
  const Json* mbs = config->find("max_batch_size");
  int64_t max_batch = mbs ? mbs->as_int().value_or(0) : 0;
  int64_t bound = -1;
  if (fill_inputs && max_batch == 0 && batchable(&bound)) {
    max_batch = bound < 0 ? kDefaultMaxBatchSize : std::min(bound, kDefaultMaxBatchSize);
    config->set("max_batch_size", Json::number(max_batch));
    if (config->find("dynamic_batching") == nullptr) config->set("dynamic_batching", Json::object());
  }
  auto describe = [&](const std::vector<TensorInfo>& list) {
    Json arr = Json::array();
    for (const TensorInfo& t : list) {
      Json entry = Json::object();
      entry.set("name", Json::string(t.name));
      entry.set("data_type", Json::string(config_dtype_name(t.triton_dtype)));
      entry.set("dims", config_dims(t, max_batch > 0));
      if (needs_reshape(t, max_batch > 0)) {
        Json reshape = Json::object();
        reshape.set("shape", Json::array());
        entry.set("reshape", std::move(reshape));
      }
      arr.push_back(std::move(entry));
    }
    return arr;
  };
  if (fill_inputs) config->set("input", describe(inputs_));
  if (fill_outputs) config->set("output", describe(outputs_));
  std::string text = config->dump();
  TRITONSERVER_Message* message = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONSERVER_MessageNewFromSerializedJson(&message, text.data(), text.size()));
  TRITONSERVER_Error* err = TRITONBACKEND_ModelSetConfig(model, 1, message);
  TRITONSERVER_MessageDelete(message);
  return err;
}

TRITONSERVER_Error* ModelState::check_config(const Json& config) {
  const Json* mbs = config.find("max_batch_size");
  max_batch_size_ = mbs ? mbs->as_int().value_or(0) : 0;
  int64_t bound = -1;
  if (max_batch_size_ > 0) {
    if (!batchable(&bound)) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   "model '" + name_ + "': max_batch_size " + std::to_string(max_batch_size_) + " needs dim 0 of every input and output of method '" +
                       method_ + "' to be dynamic; export it with a dynamic batch dimension or set max_batch_size 0");
    }
    if (bound >= 0 && max_batch_size_ > bound) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, "model '" + name_ + "': max_batch_size " +
                                                       std::to_string(max_batch_size_) + " exceeds the batch bound " +
                                                       std::to_string(bound) + " the method was exported with");
    }
  }
  bool batched = max_batch_size_ > 0;
  // Each configured tensor must be one of the method's, of its dtype and shape.
  auto check = [&](const char* field, const std::vector<TensorInfo>& list) -> TRITONSERVER_Error* {
    const Json* arr = config.find(field);
    if (arr == nullptr) return nullptr;
    for (size_t i = 0; i < arr->size(); ++i) {
      const Json& entry = arr->at(i);
      const Json* name_json = entry.find("name");
      std::string name = name_json ? name_json->as_string().value_or("") : "";
      const TensorInfo* info = nullptr;
      for (const TensorInfo& t : list)
        if (t.name == name) info = &t;
      if (info == nullptr) {
        std::string known;
        for (const TensorInfo& t : list) {
          if (!known.empty()) known += ", ";
          known += t.name;
        }
        return error(TRITONSERVER_ERROR_INVALID_ARG, "model '" + name_ + "': " + field + " '" + name +
                                                         "' is not one of method '" + method_ + "' (" + known + ")");
      }
      const Json* dt = entry.find("data_type");
      std::string dtype = dt ? dt->as_string().value_or("") : "";
      if (dtype != config_dtype_name(info->triton_dtype)) {
        return error(TRITONSERVER_ERROR_INVALID_ARG, "model '" + name_ + "': " + field + " '" + name + "' is " +
                                                         dtype + " in the configuration but " +
                                                         config_dtype_name(info->triton_dtype) + " in the program");
      }
      const Json* dims = entry.find("dims");
      Json expected = config_dims(*info, batched);
      bool same = dims != nullptr && dims->size() == expected.size();
      for (size_t d = 0; same && d < expected.size(); ++d) {
        int64_t want = *expected.at(d).as_int();
        int64_t got = dims->at(d).as_int().value_or(-2);
        // -1 in the configuration is accepted for any dim; a fixed size must
        // be the program's static size.
        same = got == -1 || got == want;
      }
      if (!same) {
        return error(TRITONSERVER_ERROR_INVALID_ARG,
                     "model '" + name_ + "': " + field + " '" + name + "' has dims " + (dims ? dims->dump() : "[]") +
                         " in the configuration but the program has " + expected.dump() +
                         (batched ? " (after the batch dimension)" : ""));
      }
    }
    return nullptr;
  };
  KILN_TRITON_RETURN_IF_ERROR(check("input", inputs_));
  KILN_TRITON_RETURN_IF_ERROR(check("output", outputs_));
  return nullptr;
}

TRITONSERVER_Error* ModelState::create(TRITONBACKEND_Model* model, ModelState** out) {
  std::unique_ptr<ModelState> state(new ModelState());
  const char* name = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelName(model, &name));
  state->name_ = name;
  uint64_t version = 0;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelVersion(model, &version));
  TRITONBACKEND_ArtifactType artifact = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  const char* location = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelRepository(model, &artifact, &location));

  TRITONSERVER_Message* message = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelConfig(model, 1, &message));
  const char* base = nullptr;
  size_t size = 0;
  TRITONSERVER_Error* err = TRITONSERVER_MessageSerializeToJson(message, &base, &size);
  std::string text = err == nullptr ? std::string(base, size) : std::string();
  TRITONSERVER_MessageDelete(message);
  if (err != nullptr) return err;
  std::string parse_error;
  std::optional<Json> config = Json::parse(text, &parse_error);
  if (!config || !config->is_object()) {
    return error(TRITONSERVER_ERROR_INTERNAL, "model '" + state->name_ + "': configuration is not JSON: " + parse_error);
  }
  KILN_TRITON_RETURN_IF_ERROR(parse_parameters(*config, &state->parameters_));

  // <repository>/<model>/<version>/<default_model_filename>, else model.kiln,
  // else model.pt2.
  std::string dir = std::string(location) + "/" + std::to_string(version) + "/";
  const Json* filename = config->find("default_model_filename");
  std::string configured = filename ? filename->as_string().value_or("") : "";
  if (!configured.empty()) {
    state->program_path_ = dir + configured;
  } else {
    state->program_path_ = is_file(dir + "model.kiln") || !is_file(dir + "model.pt2") ? dir + "model.kiln" : dir + "model.pt2";
  }
  if (!is_file(state->program_path_)) {
    return error(TRITONSERVER_ERROR_NOT_FOUND,
                 "model '" + state->name_ + "': no program file " + state->program_path_ +
                     " (the kiln backend reads default_model_filename, else model.kiln or model.pt2)");
  }

  // The program is opened once here with the configured signature policy, so a
  // program that fails it never gets an instance; the libraries are loaded by
  // the instances.
  kiln_module_t* raw_module = nullptr;
  KILN_TRITON_CALL(kiln_module_create(state->program_path_.c_str(), nullptr, 0, &raw_module),
                   "model '" + state->name_ + "': opening " + state->program_path_);
  ModulePtr module(raw_module, kiln_module_free);
  kiln_options_t* raw_options = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(build_kiln_options(state->parameters_.options, -1, &raw_options));
  OptionsPtr options(raw_options, kiln_options_free);
  KILN_TRITON_CALL(kiln_module_load(module.get(), options.get()),
                   "model '" + state->name_ + "': loading " + state->program_path_);
  KILN_TRITON_RETURN_IF_ERROR(state->read_contract(module.get()));

  bool auto_complete = false;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelAutoCompleteConfig(model, &auto_complete));
  if (auto_complete) KILN_TRITON_RETURN_IF_ERROR(state->auto_complete(model, &*config));
  KILN_TRITON_RETURN_IF_ERROR(state->check_config(*config));
  log(TRITONSERVER_LOG_INFO, "kiln: model '" + state->name_ + "' serves method '" + state->method_ + "' of " +
                                 state->program_path_ + " (" + state->method_device_ + ", max_batch_size " +
                                 std::to_string(state->max_batch_size_) + ")");
  *out = state.release();
  return nullptr;
}

}  // namespace kiln::triton
