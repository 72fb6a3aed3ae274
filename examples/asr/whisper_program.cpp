#include "whisper_program.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>

#include "kiln/program_file.h"
#include "example_util.h"

namespace kiln::asr {
namespace {

using kiln::examples::Clock;

using kiln::examples::ms_since;
using kiln::examples::parse_int;

bool parse_list(const std::string& text, std::vector<int64_t>* out) {
  out->clear();
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    int64_t v = 0;
    if (!parse_int(text.substr(start, end - start), &v)) return false;
    out->push_back(v);
    start = end + 1;
  }
  return true;
}

std::string kiln_error(const std::string& what) { return what + ": " + kiln::last_error_message(); }

// A host copy of `t` when it lives on a device; `t` itself otherwise.
kiln::Result<kiln::Tensor> to_host(const kiln::Tensor& t) {
  if (t.device().is_cpu() && t.is_contiguous()) return t;
  auto host = kiln::Tensor::empty(t.sizes(), t.dtype());
  if (!host) return host.error();
  KILN_RETURN_IF_ERROR(kiln::copy_tensor(*host, t));
  return *host;
}

}  // namespace

int64_t argmax_allowed(const float* logits, const std::vector<bool>& allowed) {
  int64_t best = -1;
  float best_value = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (allowed[i] && (best < 0 || logits[i] > best_value)) {
      best = static_cast<int64_t>(i);
      best_value = logits[i];
    }
  }
  return best;
}

bool WhisperProgram::load(const std::string& path, bool cuda_graphs, int64_t threads, std::string* error) {
  module_ = std::make_unique<kiln::Module>(path);
  if (module_->load() != kiln::Error::Ok) {
    *error = kiln_error("cannot load the program " + path);
    return false;
  }
  // The tokens and sizes the loop needs, written by export_asr.py.
  const auto& meta = module_->program()->metadata();
  auto need = [&](const char* key, int64_t* out) {
    auto it = meta.find(key);
    if (it == meta.end() || !parse_int(it->second, out)) {
      *error = path + ": program metadata '" + key + "' is missing or not an integer (export it with examples/asr/export_asr.py)";
      return false;
    }
    return true;
  };
  auto need_list = [&](const char* key, std::vector<int64_t>* out) {
    auto it = meta.find(key);
    if (it == meta.end() || !parse_list(it->second, out)) {
      *error = path + ": program metadata '" + key + "' is missing or not a list of integers";
      return false;
    }
    return true;
  };
  WhisperSpec& s = spec_;
  if (!need("n_mels", &s.n_mels) || !need("n_frames", &s.n_frames) || !need("n_text_ctx", &s.n_text_ctx) ||
      !need("decoder_layers", &s.decoder_layers) || !need("dim", &s.dim) || !need("vocab_size", &s.vocab_size) ||
      !need("token_eot", &s.token_eot) || !need("token_sot", &s.token_sot) ||
      !need("token_no_timestamps", &s.token_no_timestamps) || !need_list("suppress_ids", &s.suppress_ids) ||
      !need_list("suppress_ids_begin", &s.suppress_ids_begin))
    return false;

  if (!check_decoder_contract(path, error)) return false;
  for (const char* name : {"encoder", "decoder"}) {
    auto info = module_->method_meta(name);
    if (!info) {
      *error = kiln_error(path + ": no usable '" + std::string(name) + "' method");
      return false;
    }
    device_ = info->device.empty() ? "cpu" : info->device;
    kiln::LoadBackendOptionsMap options;
    kiln::BackendOptions aoti;
    if (threads > 0) aoti.set("num_threads", threads);
    if (device_ != "cpu") {
      // Outputs (cross keys/values, caches) stay on the GPU and go straight
      // back in as inputs; the logits are copied to the host by the loop.
      aoti.set("keep_outputs_on_device", true);
      // The step's only state is the cache it writes in place, which a graph
      // binds by address: the buffers below, the same for every step.
      if (cuda_graphs && std::string(name) == "decoder") aoti.set("cuda_graphs", true);
    }
    options.set_options("aoti", aoti);
    if (module_->load_method(name, &options) != kiln::Error::Ok) {
      *error = kiln_error("cannot load method '" + std::string(name) + "'");
      return false;
    }
  }

  auto where = kiln::parse_device(device_);
  if (!where) {
    *error = path + ": the methods' device '" + device_ + "' is not a device name";
    return false;
  }
  const std::vector<int64_t> cache = cache_shape();
  auto k = kiln::Tensor::empty(cache, kiln::DType::Float32, *where);
  auto v = kiln::Tensor::empty(cache, kiln::DType::Float32, *where);
  if (!k || !v) return *error = kiln_error("allocating the decoder cache on " + device_), false;
  self_k_ = *k;
  self_v_ = *v;

  // Greedy decoding picks among text tokens and <|endoftext|>, minus Whisper's
  // suppressed ids; the first token may also not be a blank or the end.
  allowed_.assign(static_cast<size_t>(s.vocab_size), false);
  for (int64_t i = 0; i <= s.token_eot && i < s.vocab_size; ++i) allowed_[static_cast<size_t>(i)] = true;
  for (int64_t id : s.suppress_ids)
    if (id >= 0 && id < s.vocab_size) allowed_[static_cast<size_t>(id)] = false;
  allowed_first_ = allowed_;
  for (int64_t id : s.suppress_ids_begin)
    if (id >= 0 && id < s.vocab_size) allowed_first_[static_cast<size_t>(id)] = false;
  return true;
}

bool WhisperProgram::check_decoder_contract(const std::string& path, std::string* error) const {
  auto info = module_->method_meta("decoder");
  if (!info) return *error = kiln_error(path + ": no usable 'decoder' method"), false;
  const WhisperSpec& s = spec_;
  const std::vector<int64_t> cache = cache_shape();
  auto is_cache = [&](const kiln::TensorSpec& t) {
    if (t.dtype != kiln::DType::Float32 || t.dims.size() != cache.size()) return false;
    for (size_t i = 0; i < cache.size(); ++i)
      if (t.dims[i].dynamic || t.dims[i].size != cache[i]) return false;
    return true;
  };
  const auto& in = info->inputs;
  if (in.size() != 6 || info->outputs.size() != 1 || !is_cache(in[2]) || !is_cache(in[3])) {
    *error = path + ": the decoder method should take (token, position, self_k, self_v, cross_k, cross_v), the "
                    "caches float32[" + std::to_string(s.decoder_layers) + ", " + std::to_string(s.n_text_ctx) + ", " +
             std::to_string(s.dim) + "] written in place, and return the logits; it takes " +
             std::to_string(in.size()) + " inputs and returns " + std::to_string(info->outputs.size()) +
             " outputs (export it again with examples/asr/export_asr.py)";
    return false;
  }
  return true;
}

bool WhisperProgram::clear_cache(std::string* error) {
  if (kiln::examples::zero_tensor(self_k_) != kiln::Error::Ok || kiln::examples::zero_tensor(self_v_) != kiln::Error::Ok)
    return *error = kiln_error("zeroing the decoder cache"), false;
  return true;
}

bool WhisperProgram::transcribe(std::vector<float>& mel, int64_t max_new_tokens, WindowResult* out, std::string* error) {
  const WhisperSpec& s = spec_;
  *out = WindowResult{};
  if (static_cast<int64_t>(mel.size()) != s.n_mels * s.n_frames) {
    *error = "log-mel has " + std::to_string(mel.size()) + " values, the encoder takes " +
             std::to_string(s.n_mels) + " x " + std::to_string(s.n_frames);
    return false;
  }
  auto start = Clock::now();
  const int64_t mel_sizes[] = {1, s.n_mels, s.n_frames};
  const int64_t mel_strides[] = {s.n_mels * s.n_frames, s.n_frames, 1};
  auto mel_t = kiln::Tensor::from_blob(mel.data(), mel_sizes, mel_strides, kiln::DType::Float32);
  if (!mel_t) return *error = kiln_error("mel tensor"), false;
  auto cross = module_->execute("encoder", {*mel_t});
  if (!cross || cross->size() != 2) return *error = kiln_error("running the encoder failed"), false;
  out->encoder_ms = ms_since(start);

  start = Clock::now();
  // Slots after the current position are masked out, but the cache starts
  // zeroed so that nothing undefined is ever read.
  if (!clear_cache(error)) return false;

  int64_t token = s.token_sot, position = 0;
  const int64_t one[] = {1}, unit[] = {1};
  const std::vector<int64_t> prompt = {s.token_sot, s.token_no_timestamps};
  for (;; ++position) {
    auto token_t = kiln::Tensor::from_blob(&token, one, unit, kiln::DType::Int64);
    auto position_t = kiln::Tensor::from_blob(&position, one, unit, kiln::DType::Int64);
    auto step = module_->execute("decoder", {*token_t, *position_t, self_k_, self_v_, (*cross)[0], (*cross)[1]});
    ++out->steps;
    if (!step || step->size() != 1) return *error = kiln_error("running a decoder step failed"), false;
    if (position + 1 < static_cast<int64_t>(prompt.size())) {
      token = prompt[static_cast<size_t>(position) + 1];
      continue;
    }
    auto logits = to_host((*step)[0]);
    if (!logits) return *error = kiln_error("copying the logits to the host"), false;
    if (logits->numel() != s.vocab_size) {
      *error = "the decoder returned " + logits->describe() + ", not " + std::to_string(s.vocab_size) + " logits";
      return false;
    }
    token = argmax_allowed(logits->data<float>(), out->ids.empty() ? allowed_first_ : allowed_);
    if (token == s.token_eot || position + 1 >= s.n_text_ctx ||
        static_cast<int64_t>(out->ids.size()) >= max_new_tokens)
      break;
    out->ids.push_back(token);
  }
  out->decoder_ms = ms_since(start);
  return true;
}

}  // namespace kiln::asr
