// Running one batch of requests from Triton's scheduler.
//
// With max_batch_size > 0 the method's dim 0 is the batch dimension: requests
// whose other dims agree are concatenated along it into one call of the method,
// and each output is split back by rows. Requests whose other dims differ run in
// separate calls. A request that is wrong on its own (a missing input, another
// dtype or rank) gets its own error and the rest still run; a failed call sends
// Kiln's message to every request of that call.
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "errors.h"
#include "instance_state.h"

namespace kiln::triton {

namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

struct TensorFree {
  void operator()(kiln_tensor_t* t) const { kiln_tensor_free(t); }
};
using TensorPtr = std::unique_ptr<kiln_tensor_t, TensorFree>;

// One input of one request: its shape and the buffers Triton holds its bytes in.
struct RequestInput {
  std::vector<int64_t> shape;
  struct Buffer {
    const void* data;
    uint64_t bytes;
    TRITONSERVER_MemoryType memory_type;
    int64_t memory_type_id;
  };
  std::vector<Buffer> buffers;
};

struct Pending {
  TRITONBACKEND_Request* request = nullptr;
  TRITONBACKEND_Response* response = nullptr;
  TRITONSERVER_Error* error = nullptr;  // sent with the response; owned until then
  int64_t batch = 1;
  std::vector<RequestInput> inputs;  // in the method's input order
};

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::string shape_text(const int64_t* shape, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// Reads and checks request `p`'s inputs against the method's contract as far as
// needed to place them: presence, dtype, rank, byte count and (when batching) a
// common batch size. Kiln's execute checks the rest (static dims, bounds) and
// its message reaches the client.
TRITONSERVER_Error* read_request(const ModelState& model, Pending* p) {
  const bool batched = model.max_batch_size() > 0;
  uint32_t given = 0;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestInputCount(p->request, &given));
  if (given != model.inputs().size()) {
    std::string names;
    for (const TensorInfo& t : model.inputs()) {
      if (!names.empty()) names += ", ";
      names += t.name;
    }
    return error(TRITONSERVER_ERROR_INVALID_ARG, "model '" + model.name() + "' expects " +
                                                     std::to_string(model.inputs().size()) + " inputs (" + names +
                                                     "), the request has " + std::to_string(given));
  }
  for (size_t i = 0; i < model.inputs().size(); ++i) {
    const TensorInfo& info = model.inputs()[i];
    TRITONBACKEND_Input* input = nullptr;
    if (TRITONSERVER_Error* err = TRITONBACKEND_RequestInput(p->request, info.name.c_str(), &input)) {
      TRITONSERVER_ErrorDelete(err);
      return error(TRITONSERVER_ERROR_INVALID_ARG, "model '" + model.name() + "': missing input '" + info.name + "'");
    }
    TRITONSERVER_DataType dtype = TRITONSERVER_TYPE_INVALID;
    const int64_t* shape = nullptr;
    uint32_t rank = 0, buffer_count = 0;
    uint64_t byte_size = 0;
    KILN_TRITON_RETURN_IF_ERROR(
        TRITONBACKEND_InputProperties(input, nullptr, &dtype, &shape, &rank, &byte_size, &buffer_count));
    if (dtype != info.triton_dtype) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, "model '" + model.name() + "': input '" + info.name + "' must be " +
                                                       config_dtype_name(info.triton_dtype) + ", not " +
                                                       config_dtype_name(dtype));
    }
    if (rank != info.sizes.size()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   "model '" + model.name() + "': input '" + info.name + "' must have " +
                       std::to_string(info.sizes.size()) + " dims" + (batched ? " (batch dim included)" : "") +
                       ", not shape " + shape_text(shape, rank));
    }
    RequestInput in;
    in.shape.assign(shape, shape + rank);
    for (int64_t s : in.shape) {
      if (s < 0) return error(TRITONSERVER_ERROR_INVALID_ARG, "input '" + info.name + "' has a negative size");
    }
    uint64_t expected = static_cast<uint64_t>(numel(in.shape)) * kiln_dtype_element_size(info.dtype);
    if (byte_size != expected) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, "model '" + model.name() + "': input '" + info.name + "' of shape " +
                                                       shape_text(shape, rank) + " needs " + std::to_string(expected) +
                                                       " bytes, the request has " + std::to_string(byte_size));
    }
    for (uint32_t b = 0; b < buffer_count; ++b) {
      RequestInput::Buffer buf{};
      // Host memory is asked for: Kiln copies host inputs to a GPU method's
      // device itself. Triton may still hand over device memory (a client's
      // CUDA shared memory), which is used where it lies.
      buf.memory_type = TRITONSERVER_MEMORY_CPU;
      buf.memory_type_id = 0;
      KILN_TRITON_RETURN_IF_ERROR(
          TRITONBACKEND_InputBuffer(input, b, &buf.data, &buf.bytes, &buf.memory_type, &buf.memory_type_id));
      in.buffers.push_back(buf);
    }
    if (batched) {
      if (i == 0) {
        p->batch = in.shape[0];
      } else if (in.shape[0] != p->batch) {
        return error(TRITONSERVER_ERROR_INVALID_ARG, "model '" + model.name() + "': input '" + info.name +
                                                         "' has batch size " + std::to_string(in.shape[0]) + ", input '" +
                                                         model.inputs()[0].name + "' " + std::to_string(p->batch));
      }
    }
    p->inputs.push_back(std::move(in));
  }
  return nullptr;
}

// A Kiln tensor over input `i` of the requests `group` (indices into
// `pending`): the request's own memory when there is one request with one
// buffer, else a host tensor the buffers are copied into, one after another
// along dim 0.
TRITONSERVER_Error* make_input(const ModelState& model, const std::vector<Pending>& pending,
                               const std::vector<size_t>& group, size_t i, TensorPtr* out) {
  const TensorInfo& info = model.inputs()[i];
  const RequestInput& first = pending[group[0]].inputs[i];
  kiln_tensor_t* raw = nullptr;
  if (group.size() == 1 && first.buffers.size() <= 1) {
    const RequestInput::Buffer* buf = first.buffers.empty() ? nullptr : &first.buffers[0];
    bool on_gpu = buf && buf->memory_type == TRITONSERVER_MEMORY_GPU;
    // Borrowed: Triton keeps the request's memory until the request is
    // released, after the call.
    KILN_TRITON_CALL(kiln_tensor_create_from_data(const_cast<void*>(buf ? buf->data : nullptr), info.dtype,
                                                  first.shape.data(), nullptr, first.shape.size(),
                                                  on_gpu ? KILN_DEVICE_CUDA : KILN_DEVICE_CPU,
                                                  on_gpu ? static_cast<int32_t>(buf->memory_type_id) : 0, nullptr,
                                                  nullptr, &raw),
                     "input '" + info.name + "'");
    out->reset(raw);
    return nullptr;
  }
  std::vector<int64_t> shape = first.shape;
  shape[0] = 0;
  for (size_t r : group) shape[0] += pending[r].inputs[i].shape[0];
  KILN_TRITON_CALL(kiln_tensor_create_empty(info.dtype, shape.data(), shape.size(), KILN_DEVICE_CPU, 0, &raw),
                   "batching input '" + info.name + "'");
  out->reset(raw);
  void* data = nullptr;
  KILN_TRITON_CALL(kiln_tensor_data(raw, &data), "batching input '" + info.name + "'");
  auto* dst = static_cast<char*>(data);
  for (size_t r : group) {
    for (const RequestInput::Buffer& buf : pending[r].inputs[i].buffers) {
      if (buf.memory_type == TRITONSERVER_MEMORY_GPU) {
        // Kiln's C API copies between host and device only inside execute, so
        // device buffers can be passed through but not gathered.
        return error(TRITONSERVER_ERROR_UNSUPPORTED,
                     "input '" + info.name + "' is in GPU memory in a batch of several requests or buffers; the kiln "
                     "backend batches host memory only (send inputs in system memory or disable dynamic batching)");
      }
      std::memcpy(dst, buf.data, buf.bytes);
      dst += buf.bytes;
    }
  }
  return nullptr;
}

// Copies `rows` rows starting at `row0` along dim 0 of the host tensor `t`
// (any strides) into the dense buffer `dst`.
void copy_rows(const char* base, const int64_t* sizes, const int64_t* strides, size_t rank, size_t elem, int64_t row0,
               int64_t rows, char* dst) {
  if (rank == 0) {
    std::memcpy(dst, base, elem);
    return;
  }
  // Dense row-major from dim 0 on: one copy.
  bool dense = true;
  int64_t expect = 1;
  for (size_t d = rank; d-- > 0;) {
    if (sizes[d] != 1 && strides[d] != expect) dense = false;
    expect *= sizes[d];
  }
  int64_t row_elems = 1;
  for (size_t d = 1; d < rank; ++d) row_elems *= sizes[d];
  if (dense) {
    std::memcpy(dst, base + row0 * row_elems * static_cast<int64_t>(elem), static_cast<size_t>(rows * row_elems) * elem);
    return;
  }
  // Otherwise element by element through an index counter.
  std::vector<int64_t> index(rank, 0);
  index[0] = row0;
  const int64_t total = rows * row_elems;
  for (int64_t n = 0; n < total; ++n) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += index[d] * strides[d];
    std::memcpy(dst + n * static_cast<int64_t>(elem), base + offset * static_cast<int64_t>(elem), elem);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
}

// Writes the outputs a request asked for from `outputs` (rows [row0, row0+rows)
// when batching) into its response.
TRITONSERVER_Error* respond(const ModelState& model, const std::vector<TensorPtr>& outputs, Pending* p, int64_t row0) {
  const bool batched = model.max_batch_size() > 0;
  uint32_t requested = 0;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputCount(p->request, &requested));
  for (uint32_t k = 0; k < requested; ++k) {
    const char* name = nullptr;
    KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputName(p->request, k, &name));
    size_t o = 0;
    while (o < model.outputs().size() && model.outputs()[o].name != name) ++o;
    if (o == model.outputs().size()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, "model '" + model.name() + "' has no output '" + name + "'");
    }
    const TensorInfo& info = model.outputs()[o];
    kiln_tensor_t* t = outputs[o].get();
    size_t rank = 0;
    const int64_t* sizes = nullptr;
    const int64_t* strides = nullptr;
    void* data = nullptr;
    kiln_device_type_t device = KILN_DEVICE_CPU;
    KILN_TRITON_CALL(kiln_tensor_dim(t, &rank), "output '" + info.name + "'");
    KILN_TRITON_CALL(kiln_tensor_sizes(t, &sizes), "output '" + info.name + "'");
    KILN_TRITON_CALL(kiln_tensor_strides(t, &strides), "output '" + info.name + "'");
    KILN_TRITON_CALL(kiln_tensor_data(t, &data), "output '" + info.name + "'");
    KILN_TRITON_CALL(kiln_tensor_device(t, &device, nullptr), "output '" + info.name + "'");
    if (device != KILN_DEVICE_CPU) {
      // Kiln returns a GPU method's outputs on the host when its inputs came
      // from the host (aoti.keep_outputs_on_device off), which is how the
      // backend feeds it.
      return error(TRITONSERVER_ERROR_UNSUPPORTED,
                   "output '" + info.name + "' stayed on the device; do not set aoti.keep_outputs_on_device");
    }
    std::vector<int64_t> shape(sizes, sizes + rank);
    int64_t rows = rank > 0 ? shape[0] : 1;
    if (batched) {
      rows = p->batch;
      shape[0] = rows;
    }
    const size_t elem = kiln_dtype_element_size(info.dtype);
    const uint64_t bytes = static_cast<uint64_t>(numel(shape)) * elem;
    TRITONBACKEND_Output* output = nullptr;
    KILN_TRITON_RETURN_IF_ERROR(
        TRITONBACKEND_ResponseOutput(p->response, &output, name, info.triton_dtype, shape.data(), shape.size()));
    void* buffer = nullptr;
    TRITONSERVER_MemoryType memory_type = TRITONSERVER_MEMORY_CPU;
    int64_t memory_type_id = 0;
    KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &buffer, bytes, &memory_type, &memory_type_id));
    if (memory_type == TRITONSERVER_MEMORY_GPU) {
      return error(TRITONSERVER_ERROR_UNSUPPORTED, "output '" + info.name + "': Triton offered GPU memory for it; the kiln "
                                                   "backend writes outputs to host memory");
    }
    if (bytes > 0) {
      copy_rows(static_cast<const char*>(data), sizes, strides, rank, elem, batched ? row0 : 0, rows,
                static_cast<char*>(buffer));
    }
  }
  return nullptr;
}

// Runs the method once on the requests `group` and fills their responses.
void run_group(InstanceState* instance, std::vector<Pending>& pending, const std::vector<size_t>& group,
               uint64_t* compute_start, uint64_t* compute_end) {
  const ModelState& model = *instance->model();
  auto fail_all = [&](TRITONSERVER_Error* err) {
    // Each response takes its own error object.
    for (size_t r : group) {
      pending[r].error = TRITONSERVER_ErrorNew(TRITONSERVER_ErrorCode(err), TRITONSERVER_ErrorMessage(err));
    }
    TRITONSERVER_ErrorDelete(err);
  };
  std::vector<TensorPtr> inputs(model.inputs().size());
  std::vector<kiln_tensor_t*> handles;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (TRITONSERVER_Error* err = make_input(model, pending, group, i, &inputs[i])) return fail_all(err);
    handles.push_back(inputs[i].get());
  }
  int64_t total = 0;
  for (size_t r : group) total += pending[r].batch;
  kiln_tensor_t** raw_outputs = nullptr;
  size_t n_outputs = 0;
  *compute_start = now_ns();
  kiln_status_t status = kiln_module_execute(instance->module(), model.method().c_str(), handles.data(), handles.size(),
                                             &raw_outputs, &n_outputs);
  *compute_end = now_ns();
  if (status != KILN_OK) {
    return fail_all(kiln_error(status, "model '" + model.name() + "', method '" + model.method() + "'"));
  }
  std::vector<TensorPtr> outputs;
  for (size_t o = 0; o < n_outputs; ++o) outputs.emplace_back(raw_outputs[o]);
  kiln_tensor_array_free(raw_outputs, 0);
  if (outputs.size() != model.outputs().size()) {
    return fail_all(error(TRITONSERVER_ERROR_INTERNAL, "method returned " + std::to_string(outputs.size()) +
                                                           " outputs, its contract has " +
                                                           std::to_string(model.outputs().size())));
  }
  if (model.max_batch_size() > 0) {
    for (size_t o = 0; o < outputs.size(); ++o) {
      size_t rank = 0;
      const int64_t* sizes = nullptr;
      kiln_tensor_dim(outputs[o].get(), &rank);
      kiln_tensor_sizes(outputs[o].get(), &sizes);
      if (rank == 0 || sizes[0] != total) {
        return fail_all(error(TRITONSERVER_ERROR_INTERNAL, "output '" + model.outputs()[o].name +
                                                               "' does not have the batch size " +
                                                               std::to_string(total) + " in dim 0"));
      }
    }
  }
  int64_t row0 = 0;
  for (size_t r : group) {
    pending[r].error = respond(model, outputs, &pending[r], row0);
    row0 += pending[r].batch;
  }
}

}  // namespace

void execute(InstanceState* instance, TRITONBACKEND_Request** requests, uint32_t count) {
  const uint64_t exec_start = now_ns();
  const ModelState& model = *instance->model();
  std::vector<Pending> pending(count);
  for (uint32_t r = 0; r < count; ++r) {
    Pending& p = pending[r];
    p.request = requests[r];
    if (TRITONSERVER_Error* err = TRITONBACKEND_ResponseNew(&p.response, p.request)) {
      // Without a response object the request cannot be answered; Triton
      // reports it to the client as a failed request once it is released.
      log(TRITONSERVER_LOG_ERROR, std::string("kiln: creating a response failed: ") + TRITONSERVER_ErrorMessage(err));
      TRITONSERVER_ErrorDelete(err);
      p.response = nullptr;
      continue;
    }
    p.error = read_request(model, &p);
  }

  // Requests that can share one call: same dims after the batch dim. Without
  // batching every request is its own call.
  std::map<std::vector<int64_t>, std::vector<size_t>> groups;
  std::vector<std::vector<size_t>> order;
  for (size_t r = 0; r < pending.size(); ++r) {
    if (pending[r].response == nullptr || pending[r].error != nullptr) continue;
    if (model.max_batch_size() <= 0) {
      order.push_back({r});
      continue;
    }
    std::vector<int64_t> key;
    for (const RequestInput& in : pending[r].inputs) {
      key.push_back(static_cast<int64_t>(in.shape.size()));
      key.insert(key.end(), in.shape.begin() + 1, in.shape.end());
    }
    groups[key].push_back(r);
  }
  for (auto& [key, members] : groups) order.push_back(std::move(members));

  uint64_t compute_start = exec_start, compute_end = exec_start;
  int64_t batch_total = 0;
  for (const std::vector<size_t>& group : order) {
    uint64_t start = 0, end = 0;
    run_group(instance, pending, group, &start, &end);
    if (compute_start == exec_start) compute_start = start;
    compute_end = end;
    for (size_t r : group) batch_total += pending[r].batch;
  }

  const uint64_t exec_end = now_ns();
  for (Pending& p : pending) {
    if (p.response != nullptr) {
      const bool ok = p.error == nullptr;
      if (TRITONSERVER_Error* err = TRITONBACKEND_ResponseSend(p.response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, p.error)) {
        log(TRITONSERVER_LOG_ERROR, std::string("kiln: sending a response failed: ") + TRITONSERVER_ErrorMessage(err));
        TRITONSERVER_ErrorDelete(err);
      }
      if (TRITONSERVER_Error* err = TRITONBACKEND_ModelInstanceReportStatistics(
              instance->triton_instance(), p.request, ok, exec_start, compute_start, compute_end, exec_end)) {
        TRITONSERVER_ErrorDelete(err);
      }
    }
    if (TRITONSERVER_Error* err = TRITONBACKEND_RequestRelease(p.request, TRITONSERVER_REQUEST_RELEASE_ALL)) {
      TRITONSERVER_ErrorDelete(err);
    }
  }
  if (batch_total > 0) {
    if (TRITONSERVER_Error* err = TRITONBACKEND_ModelInstanceReportBatchStatistics(
            instance->triton_instance(), static_cast<uint64_t>(batch_total), exec_start, compute_start, compute_end,
            exec_end)) {
      TRITONSERVER_ErrorDelete(err);
    }
  }
}

}  // namespace kiln::triton
