// One Triton model instance: its own Kiln module with the served method loaded
// on the instance's device.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/c_api.h"
#include "model_state.h"
#include "triton_api.h"

namespace kiln::triton {

class InstanceState {
 public:
  // KIND_CPU instances run a CPU program; KIND_GPU instances run a CUDA
  // program on GPU `device_id` (aoti.device_index). KIND_AUTO and KIND_MODEL
  // follow the program's device. A mismatch fails the instance's load, saying
  // which kind the program needs.
  static TRITONSERVER_Error* create(ModelState* model, TRITONBACKEND_ModelInstance* instance, InstanceState** out);
  ~InstanceState();
  InstanceState(const InstanceState&) = delete;
  InstanceState& operator=(const InstanceState&) = delete;

  ModelState* model() const { return model_; }
  TRITONBACKEND_ModelInstance* triton_instance() const { return instance_; }
  kiln_module_t* module() const { return module_; }
  const std::string& name() const { return name_; }

 private:
  InstanceState() = default;

  ModelState* model_ = nullptr;
  TRITONBACKEND_ModelInstance* instance_ = nullptr;
  kiln_module_t* module_ = nullptr;
  std::string name_;
};

// Runs `requests` (one batch of Triton's scheduler) and sends every response;
// each request is released whatever happens.
void execute(InstanceState* instance, TRITONBACKEND_Request** requests, uint32_t count);

}  // namespace kiln::triton
