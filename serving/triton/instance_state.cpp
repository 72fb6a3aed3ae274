#include "instance_state.h"

#include <memory>

#include "errors.h"
#include "parameters.h"

namespace kiln::triton {

InstanceState::~InstanceState() {
  // Unloads the method: its library, container and weights.
  kiln_module_free(module_);
}

TRITONSERVER_Error* InstanceState::create(ModelState* model, TRITONBACKEND_ModelInstance* instance,
                                          InstanceState** out) {
  std::unique_ptr<InstanceState> state(new InstanceState());
  state->model_ = model;
  state->instance_ = instance;
  const char* name = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceName(instance, &name));
  state->name_ = name;
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_AUTO;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceKind(instance, &kind));
  int32_t device_id = 0;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceDeviceId(instance, &device_id));

  const bool cuda_program = model->method_device() == "cuda";
  int32_t device_index = -1;  // -1: the index the program names
  if (kind == TRITONSERVER_INSTANCEGROUPKIND_CPU && cuda_program) {
    return error(TRITONSERVER_ERROR_INVALID_ARG, "instance '" + state->name_ + "': method '" + model->method() +
                                                     "' was compiled for CUDA; use an instance group of kind KIND_GPU");
  }
  if (kind == TRITONSERVER_INSTANCEGROUPKIND_GPU) {
    if (!cuda_program) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   "instance '" + state->name_ + "': method '" + model->method() + "' was compiled for " +
                       model->method_device() + "; use an instance group of kind KIND_CPU");
    }
    // Triton's GPU number is the CUDA device ordinal Kiln's device index names.
    device_index = device_id;
  }

  kiln_options_t* raw_options = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(build_kiln_options(model->parameters().options, device_index, &raw_options));
  std::unique_ptr<kiln_options_t, void (*)(kiln_options_t*)> options(raw_options, kiln_options_free);
  const std::string what = "instance '" + state->name_ + "': loading method '" + model->method() + "' of " +
                           model->program_path();
  KILN_TRITON_CALL(kiln_module_create(model->program_path().c_str(), nullptr, 0, &state->module_), what);
  KILN_TRITON_CALL(kiln_module_load(state->module_, options.get()), what);
  // Loaded now, not on the first request: a method that cannot load fails the
  // model's load, and the first request does not pay for it.
  KILN_TRITON_CALL(kiln_module_load_method(state->module_, model->method().c_str(), nullptr), what);
  log(TRITONSERVER_LOG_INFO, "kiln: instance '" + state->name_ + "' loaded" +
                                 (device_index >= 0 ? " on cuda:" + std::to_string(device_index) : std::string(" on cpu")));
  *out = state.release();
  return nullptr;
}

}  // namespace kiln::triton
