// What a Triton model of the kiln backend knows once: its program file, the
// method it serves, that method's contract, and the completed configuration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json.h"
#include "kiln/c_api.h"
#include "parameters.h"
#include "triton_api.h"

namespace kiln::triton {

// One input or output of the served method, as the program declares it.
struct TensorInfo {
  std::string name;  // the program's name, or INPUT__<i> / OUTPUT__<i> when it gave none
  kiln_dtype_t dtype = KILN_DTYPE_FLOAT32;
  TRITONSERVER_DataType triton_dtype = TRITONSERVER_TYPE_INVALID;
  std::vector<int64_t> sizes;   // the size at export for dynamic dims
  std::vector<bool> dynamic;
  std::vector<int64_t> max;     // upper bound per dim, -1 when unbounded
};

class ModelState {
 public:
  // Reads the configuration, opens and checks the program (the signature
  // policy applies here), reads the method's contract and, when the server
  // allows it, fills in the configuration from it.
  static TRITONSERVER_Error* create(TRITONBACKEND_Model* model, ModelState** out);
  ~ModelState();

  const std::string& name() const { return name_; }
  const std::string& program_path() const { return program_path_; }
  const std::string& method() const { return method_; }
  const std::string& method_device() const { return method_device_; }
  const Parameters& parameters() const { return parameters_; }
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  // > 0 when Triton batches: requests carry a leading batch dimension that is
  // dim 0 of every input and output of the method.
  int64_t max_batch_size() const { return max_batch_size_; }

 private:
  ModelState() = default;
  TRITONSERVER_Error* read_contract(kiln_module_t* module);
  TRITONSERVER_Error* auto_complete(TRITONBACKEND_Model* model, Json* config);
  TRITONSERVER_Error* check_config(const Json& config);
  // Whether dim 0 of every input and output is dynamic (the batch dimension
  // Triton may concatenate along), and its upper bound (-1: unbounded).
  bool batchable(int64_t* bound) const;

  std::string name_;
  std::string program_path_;
  std::string method_;
  std::string method_device_;
  Parameters parameters_;
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
  int64_t max_batch_size_ = 0;
};

// Triton's data type for a Kiln dtype (TRITONSERVER_TYPE_INVALID when Triton has
// none) and the configuration's spelling of it ("TYPE_FP32").
TRITONSERVER_DataType triton_dtype(kiln_dtype_t dtype);
const char* config_dtype_name(TRITONSERVER_DataType dtype);

}  // namespace kiln::triton
