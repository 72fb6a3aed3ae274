#include "llm_session.h"

#include <algorithm>

#include "example_util.h"

namespace kiln::llm {
namespace {

std::string dims_string(const TensorSpec& spec) {
  std::string out = std::string(dtype_name(spec.dtype)) + "[";
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    const DimSpec& d = spec.dims[i];
    if (i) out += ", ";
    out += d.dynamic ? std::to_string(d.min) + ".." + std::to_string(d.max) : std::to_string(d.size);
  }
  return out + "]";
}

bool is_static(const TensorSpec& spec, DType dtype, std::initializer_list<int64_t> sizes) {
  if (spec.dtype != dtype || spec.dims.size() != sizes.size()) return false;
  size_t i = 0;
  for (int64_t s : sizes) {
    const DimSpec& d = spec.dims[i++];
    if (d.dynamic || (s >= 0 && d.size != s)) return false;
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<LlmSession>> LlmSession::open(const std::string& path, const LoadBackendOptionsMap& options,
                                                     bool decode_cuda_graphs) {
  std::unique_ptr<LlmSession> self(new LlmSession(path));
  KILN_RETURN_IF_ERROR(self->module_.load(options));
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> names, self->module_.method_names());
  for (const char* name : {"prefill", "decode"})
    if (std::find(names.begin(), names.end(), name) == names.end())
      return self->contract_error(std::string("it has no method '") + name + "'");
  KILN_ASSIGN_OR_RETURN(MethodInfo prefill, self->module_.method_meta("prefill"));
  KILN_ASSIGN_OR_RETURN(MethodInfo decode, self->module_.method_meta("decode"));
  KILN_RETURN_IF_ERROR(self->check_contract(prefill, decode));
  KILN_RETURN_IF_ERROR(self->module_.load_method("prefill"));
  LoadBackendOptionsMap decode_options = options;
  self->decode_cuda_graphs_ = decode_cuda_graphs && self->device_.type == DeviceType::CUDA;
  if (self->decode_cuda_graphs_) {
    const BackendOptions* given = options.options_for("aoti");
    BackendOptions aoti = given ? *given : BackendOptions();
    aoti.set("cuda_graphs", true);
    decode_options.set_options("aoti", std::move(aoti));
  }
  KILN_RETURN_IF_ERROR(self->module_.load_method("decode", &decode_options));

  KILN_ASSIGN_OR_RETURN(self->k_cache_, Tensor::empty(self->cache_shape_, self->cache_dtype_, self->device_));
  KILN_ASSIGN_OR_RETURN(self->v_cache_, Tensor::empty(self->cache_shape_, self->cache_dtype_, self->device_));
  KILN_RETURN_IF_ERROR(self->clear_cache());
  self->logits_.resize(static_cast<size_t>(self->vocab_size_));
  return self;
}

Error LlmSession::contract_error(const std::string& what) const {
  return set_error(Error::InvalidProgram, path_ + " is not an LLM program as examples/llm/export_llm.py writes "
                                                  "them: " + what);
}

Error LlmSession::check_contract(const MethodInfo& prefill, const MethodInfo& decode) {
  auto input_names = [](const MethodInfo& m) {
    std::string out;
    for (const TensorSpec& s : m.inputs) out += (out.empty() ? "" : ", ") + s.name + " " + dims_string(s);
    return out;
  };
  if (prefill.inputs.size() != 3 || prefill.inputs[0].name != "tokens" || prefill.inputs[1].name != "k_cache" ||
      prefill.inputs[2].name != "v_cache")
    return contract_error("method 'prefill' should take (tokens, k_cache, v_cache) but takes (" +
                          input_names(prefill) + ")");
  if (decode.inputs.size() != 4 || decode.inputs[0].name != "token" || decode.inputs[1].name != "pos" ||
      decode.inputs[2].name != "k_cache" || decode.inputs[3].name != "v_cache")
    return contract_error("method 'decode' should take (token, pos, k_cache, v_cache) but takes (" +
                          input_names(decode) + ")");
  if (prefill.device != decode.device)
    return contract_error("'prefill' runs on " + prefill.device + " but 'decode' on " + decode.device);
  auto device = parse_device(decode.device);
  if (!device) return contract_error("unknown device '" + decode.device + "'");
  device_ = *device;

  // The cache: static rank-4, one shape and dtype for k and v in both methods.
  const TensorSpec& k = decode.inputs[2];
  if (k.dims.size() != 4) return contract_error("k_cache should be rank 4 but is " + dims_string(k));
  cache_dtype_ = k.dtype;
  cache_shape_.clear();
  for (const DimSpec& d : k.dims) cache_shape_.push_back(d.size);
  for (const TensorSpec* spec : {&decode.inputs[2], &decode.inputs[3], &prefill.inputs[1], &prefill.inputs[2]})
    if (!is_static(*spec, cache_dtype_, {cache_shape_[0], cache_shape_[1], cache_shape_[2], cache_shape_[3]}))
      return contract_error("the caches differ: " + dims_string(k) + " vs " + spec->name + " " + dims_string(*spec));

  const TensorSpec& tokens = prefill.inputs[0];
  if (tokens.dtype != DType::Int64 || tokens.dims.size() != 2 || tokens.dims[0].dynamic || tokens.dims[0].size != 1 ||
      !tokens.dims[1].dynamic)
    return contract_error("prefill's tokens should be int64[1, dynamic] but are " + dims_string(tokens));
  max_prompt_ = std::min(tokens.dims[1].max, cache_shape_[2]);
  if (!is_static(decode.inputs[0], DType::Int64, {1, 1}) || !is_static(decode.inputs[1], DType::Int64, {1}))
    return contract_error("decode should take token int64[1, 1] and pos int64[1] but takes " + input_names(decode));

  for (const MethodInfo* m : {&prefill, &decode})
    if (m->outputs.size() != 1 || !is_static(m->outputs[0], DType::Float32, {1, -1}))
      return contract_error("method '" + m->name + "' should return float32[1, vocab] logits");
  vocab_size_ = decode.outputs[0].dims[1].size;
  if (prefill.outputs[0].dims[1].size != vocab_size_)
    return contract_error("prefill and decode return logits of different vocabulary sizes");
  return Error::Ok;
}

Error LlmSession::clear_cache() {
  KILN_RETURN_IF_ERROR(examples::zero_tensor(k_cache_));
  return examples::zero_tensor(v_cache_);
}

Result<std::span<const float>> LlmSession::run(const char* method, const std::vector<Tensor>& inputs) {
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, module_.execute(method, inputs));
  // Logits stay on the device with the cache (an input was a device tensor):
  // one small copy of vocab floats to the host, for the sampler.
  const std::vector<int64_t> shape = {1, vocab_size_};
  KILN_ASSIGN_OR_RETURN(Tensor host, Tensor::from_blob(logits_.data(), shape, contiguous_strides(shape), DType::Float32));
  KILN_RETURN_IF_ERROR(copy_tensor(host, outputs.at(0)));
  return std::span<const float>(logits_);
}

Result<std::span<const float>> LlmSession::prefill(std::span<const int64_t> prompt) {
  if (prompt.empty()) return set_error(Error::InvalidArgument, "the prompt is empty");
  if (static_cast<int64_t>(prompt.size()) > max_prompt_)
    return set_error(Error::InvalidArgument, "the prompt has " + std::to_string(prompt.size()) +
                                                 " tokens but the program's prefill takes at most " +
                                                 std::to_string(max_prompt_));
  for (int64_t id : prompt)
    if (id < 0 || id >= vocab_size_)
      return set_error(Error::InvalidArgument, "prompt token " + std::to_string(id) + " is outside the vocabulary (0.." +
                                                   std::to_string(vocab_size_ - 1) + ")");
  if (prompt.size() == 1) return decode(prompt[0], 0);
  ids_.assign(prompt.begin(), prompt.end());
  const std::vector<int64_t> shape = {1, static_cast<int64_t>(ids_.size())};
  KILN_ASSIGN_OR_RETURN(Tensor tokens, Tensor::from_blob(ids_.data(), shape, contiguous_strides(shape), DType::Int64));
  return run("prefill", {tokens, k_cache_, v_cache_});
}

Result<std::span<const float>> LlmSession::decode(int64_t token, int64_t pos) {
  if (token < 0 || token >= vocab_size_)
    return set_error(Error::InvalidArgument, "token " + std::to_string(token) + " is outside the vocabulary (0.." +
                                                 std::to_string(vocab_size_ - 1) + ")");
  if (pos < 0 || pos >= max_seq())
    return set_error(Error::InvalidArgument, "position " + std::to_string(pos) + " is outside the cache (0.." +
                                                 std::to_string(max_seq() - 1) + ")");
  ids_.assign({token});
  position_.assign({pos});
  const std::vector<int64_t> token_shape = {1, 1};
  const std::vector<int64_t> pos_shape = {1};
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::from_blob(ids_.data(), token_shape, contiguous_strides(token_shape), DType::Int64));
  KILN_ASSIGN_OR_RETURN(Tensor p, Tensor::from_blob(position_.data(), pos_shape, contiguous_strides(pos_shape), DType::Int64));
  return run("decode", {t, p, k_cache_, v_cache_});
}

}  // namespace kiln::llm
