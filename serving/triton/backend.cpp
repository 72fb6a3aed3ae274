// The entry points Triton looks up in libtriton_kiln.so. Each holds a firewall:
// no C++ exception crosses into the server.
#include <exception>
#include <string>

#include "errors.h"
#include "instance_state.h"
#include "model_state.h"
#include "triton_api.h"

using kiln::triton::InstanceState;
using kiln::triton::ModelState;

namespace {

TRITONSERVER_Error* from_exception(const char* where) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return kiln::triton::error(TRITONSERVER_ERROR_UNAVAILABLE, std::string(where) + ": out of memory");
  } catch (const std::exception& e) {
    return kiln::triton::error(TRITONSERVER_ERROR_INTERNAL, std::string(where) + ": " + e.what());
  } catch (...) {
    return kiln::triton::error(TRITONSERVER_ERROR_INTERNAL, std::string(where) + ": unknown exception");
  }
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  try {
    uint32_t major = 0, minor = 0;
    KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ApiVersion(&major, &minor));
    if (major != kTritonBackendApiMajor || minor < kTritonBackendApiMinor) {
      return kiln::triton::error(
          TRITONSERVER_ERROR_UNSUPPORTED,
          "the kiln backend needs Triton backend API " + std::to_string(kTritonBackendApiMajor) + "." +
              std::to_string(kTritonBackendApiMinor) + " or a later minor version; this server has " +
              std::to_string(major) + "." + std::to_string(minor));
    }
    // The same check for Kiln: the library loaded must not be older than the
    // header the backend was built against.
    if (kiln_abi_version() < KILN_ABI_VERSION) {
      return kiln::triton::error(TRITONSERVER_ERROR_UNSUPPORTED,
                                 "libkiln has ABI version " + std::to_string(kiln_abi_version()) +
                                     ", the kiln backend needs " + std::to_string(KILN_ABI_VERSION));
    }
    kiln::triton::log(TRITONSERVER_LOG_INFO, std::string("kiln backend: Kiln ") + kiln_version_string() +
                                                 ", Triton backend API " + std::to_string(major) + "." +
                                                 std::to_string(minor));
    return nullptr;
  } catch (...) {
    return from_exception("kiln backend initialisation");
  }
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  try {
    ModelState* state = nullptr;
    KILN_TRITON_RETURN_IF_ERROR(ModelState::create(model, &state));
    TRITONSERVER_Error* err = TRITONBACKEND_ModelSetState(model, state);
    if (err != nullptr) delete state;
    return err;
  } catch (...) {
    return from_exception("kiln model initialisation");
  }
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* state = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &state));
  delete static_cast<ModelState*>(state);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  try {
    TRITONBACKEND_Model* model = nullptr;
    KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
    void* model_state = nullptr;
    KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &model_state));
    InstanceState* state = nullptr;
    KILN_TRITON_RETURN_IF_ERROR(InstanceState::create(static_cast<ModelState*>(model_state), instance, &state));
    TRITONSERVER_Error* err = TRITONBACKEND_ModelInstanceSetState(instance, state);
    if (err != nullptr) delete state;
    return err;
  } catch (...) {
    return from_exception("kiln instance initialisation");
  }
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  void* state = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &state));
  delete static_cast<InstanceState*>(state);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests, uint32_t request_count) {
  void* state = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &state));
  try {
    // Every request is answered and released inside: the call itself reports
    // success, as Triton requires once the backend owns the requests.
    kiln::triton::execute(static_cast<InstanceState*>(state), requests, request_count);
  } catch (...) {
    TRITONSERVER_Error* err = from_exception("kiln execute");
    kiln::triton::log(TRITONSERVER_LOG_ERROR, TRITONSERVER_ErrorMessage(err));
    TRITONSERVER_ErrorDelete(err);
  }
  return nullptr;
}

}  // extern "C"
