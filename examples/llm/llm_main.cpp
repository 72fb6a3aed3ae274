// kiln-llm: token generation with an exported decoder-only LLM (prefill +
// decode methods, KV cache kept on the device: llm_session.h), sampling in C++
// (sampler.h). Prints the prompt and generated token ids and the prefill and
// decode speeds in tokens/s.
//
// The example model has random weights (export_llm.py says why), so there is
// no tokenizer: prompts and outputs are token ids.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "llm_session.h"
#include "sampler.h"
#include "example_util.h"
#include "program/atomic_file.h"

namespace {

using kiln::examples::Clock;
using kiln::llm::LlmSession;
using kiln::llm::Sampler;
using kiln::llm::SamplerConfig;

const char kUsage[] =
    "usage: kiln-llm PROGRAM.kiln [--prompt \"ID ID ...\" | --prompt-len N] [--max-new-tokens N]\n"
    "                [--temperature T] [--top-k K] [--top-p P] [--seed S] [--eos ID]\n"
    "                [--force \"ID ID ...\"] [--logits-out FILE] [--warmup N] [--threads N] [--no-cuda-graphs] [--json]\n"
    "\n"
    "Runs the prompt through the program's `prefill` method, then generates one token per\n"
    "`decode` call, sampling each from the logits; prints the tokens and tokens/s.\n"
    "\n"
    "  --prompt IDS          prompt token ids, separated by spaces or commas\n"
    "  --prompt-len N        a random prompt of N ids drawn with --seed (default 16)\n"
    "  --max-new-tokens N    tokens to generate (default 32; fewer if the cache fills or --eos)\n"
    "  --temperature T       0 (default) = greedy; > 0 samples from softmax(logits / T)\n"
    "  --top-k K             sample from the K most likely tokens only (default 0 = all)\n"
    "  --top-p P             sample from the smallest set of tokens with probability >= P\n"
    "                        (default 1 = all)\n"
    "  --seed S              seed of the sampler and of --prompt-len's prompt (default 0)\n"
    "  --eos ID              stop after generating this token\n"
    "  --force IDS           feed these tokens to decode instead of the sampled ones (teacher\n"
    "                        forcing, for comparisons); generates as many tokens as given\n"
    "  --logits-out FILE     write the logits of every step (prefill's, then each decode's)\n"
    "                        as raw little-endian float32 [steps, vocab]\n"
    "  --warmup N            untimed generations before the timed one (default 1): the first\n"
    "                        calls pay for thread pools, lazy kernel loading and allocations\n"
    "  --threads N           CPU threads of the compiled code (aoti.num_threads)\n"
    "  --no-cuda-graphs      run decode eagerly (on CUDA each decode step replays as a CUDA\n"
    "                        graph bound to the KV cache by default)\n"
    "  --json                print the result as JSON\n";

struct Options {
  std::string program;
  std::vector<int64_t> prompt;
  int64_t prompt_len = 16;
  int64_t max_new_tokens = 32;
  SamplerConfig sampling;
  int64_t eos = -1;
  std::vector<int64_t> forced;
  std::string logits_out;
  int64_t warmup = 1;
  int64_t threads = 0;
  bool cuda_graphs = true;
  bool json = false;
};

using kiln::examples::parse_int;

bool parse_float(const std::string& text, float* out) {
  char* end = nullptr;
  *out = std::strtof(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size();
}

bool parse_ids(const std::string& text, std::vector<int64_t>* out) {
  std::string normalized = text;
  std::replace(normalized.begin(), normalized.end(), ',', ' ');
  std::istringstream in(normalized);
  std::string word;
  out->clear();
  while (in >> word) {
    int64_t id = 0;
    if (!parse_int(word, &id)) return false;
    out->push_back(id);
  }
  return true;
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "kiln-llm: %s\n\n%s", message.c_str(), kUsage);
  return 2;
}

// 0: parsed; otherwise the exit code.
int parse_args(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return -1;
    } else if (arg == "--json") {
      opt->json = true;
    } else if (arg == "--no-cuda-graphs") {
      opt->cuda_graphs = false;
    } else if (arg == "--prompt") {
      if (!value(&v) || !parse_ids(v, &opt->prompt) || opt->prompt.empty())
        return usage_error("--prompt needs token ids, e.g. --prompt \"5 17 42\"");
    } else if (arg == "--force") {
      if (!value(&v) || !parse_ids(v, &opt->forced) || opt->forced.empty())
        return usage_error("--force needs token ids, e.g. --force \"5 17 42\"");
    } else if (arg == "--prompt-len") {
      if (!value(&v) || !parse_int(v, &opt->prompt_len) || opt->prompt_len < 1)
        return usage_error("--prompt-len needs an integer >= 1");
    } else if (arg == "--max-new-tokens") {
      if (!value(&v) || !parse_int(v, &opt->max_new_tokens) || opt->max_new_tokens < 1)
        return usage_error("--max-new-tokens needs an integer >= 1");
    } else if (arg == "--temperature") {
      if (!value(&v) || !parse_float(v, &opt->sampling.temperature)) return usage_error("--temperature needs a number");
    } else if (arg == "--top-k") {
      if (!value(&v) || !parse_int(v, &opt->sampling.top_k)) return usage_error("--top-k needs an integer");
    } else if (arg == "--top-p") {
      if (!value(&v) || !parse_float(v, &opt->sampling.top_p)) return usage_error("--top-p needs a number");
    } else if (arg == "--seed") {
      int64_t seed = 0;
      if (!value(&v) || !parse_int(v, &seed) || seed < 0) return usage_error("--seed needs an integer >= 0");
      opt->sampling.seed = static_cast<uint64_t>(seed);
    } else if (arg == "--eos") {
      if (!value(&v) || !parse_int(v, &opt->eos) || opt->eos < 0) return usage_error("--eos needs a token id");
    } else if (arg == "--logits-out") {
      if (!value(&opt->logits_out)) return usage_error("--logits-out needs a file name");
    } else if (arg == "--warmup") {
      if (!value(&v) || !parse_int(v, &opt->warmup) || opt->warmup < 0)
        return usage_error("--warmup needs an integer >= 0");
    } else if (arg == "--threads") {
      if (!value(&v) || !parse_int(v, &opt->threads) || opt->threads < 1)
        return usage_error("--threads needs an integer >= 1");
    } else if (!arg.empty() && arg[0] == '-') {
      return usage_error("unknown option " + arg);
    } else if (opt->program.empty()) {
      opt->program = arg;
    } else {
      return usage_error("unexpected argument " + arg + " (one program only)");
    }
  }
  if (opt->program.empty()) return usage_error("no program given");
  if (std::string problem = Sampler::check(opt->sampling); !problem.empty()) return usage_error(problem);
  if (!opt->forced.empty()) opt->max_new_tokens = static_cast<int64_t>(opt->forced.size());
  return 0;
}

using kiln::examples::ms_since;

struct Generation {
  std::vector<int64_t> tokens;
  std::vector<float> logits;  // [steps, vocab] when kept
  double prefill_ms = 0;
  double decode_ms = 0;     // all decode calls (model + logits to the host)
  double sampling_ms = 0;   // all sampler calls
  int64_t decode_calls = 0;
  std::vector<double> step_ms;
  std::string stopped_by = "max-new-tokens";
};

// One generation: prefill, then a decode call per token after the first. The
// last token sampled is not fed back (nothing would read its logits).
kiln::Result<Generation> generate(LlmSession& llm, const Options& opt, const std::vector<int64_t>& prompt,
                                  bool keep_logits) {
  Sampler sampler(opt.sampling);
  Generation gen;
  const int64_t vocab = llm.vocab_size();
  auto keep = [&](std::span<const float> logits) {
    if (keep_logits) gen.logits.insert(gen.logits.end(), logits.begin(), logits.end());
  };
  const auto t0 = Clock::now();
  KILN_ASSIGN_OR_RETURN(std::span<const float> logits, llm.prefill(prompt));
  gen.prefill_ms = ms_since(t0);
  keep(logits);
  int64_t pos = static_cast<int64_t>(prompt.size());
  while (true) {
    const auto s0 = Clock::now();
    // Forced tokens (--force) replace sampling; nothing is drawn for them.
    const int64_t next = opt.forced.empty() ? sampler.sample(logits) : opt.forced[gen.tokens.size()];
    gen.sampling_ms += ms_since(s0);
    if (next < 0 || next >= vocab)
      return kiln::set_error(kiln::Error::InvalidArgument, "token " + std::to_string(next) + " is outside the vocabulary");
    gen.tokens.push_back(next);
    if (static_cast<int64_t>(gen.tokens.size()) >= opt.max_new_tokens) break;
    if (next == opt.eos) {
      gen.stopped_by = "eos";
      break;
    }
    if (pos >= llm.max_seq()) {
      gen.stopped_by = "cache full";
      break;
    }
    const auto d0 = Clock::now();
    KILN_ASSIGN_OR_RETURN(logits, llm.decode(next, pos));
    const double step = ms_since(d0);
    gen.decode_ms += step;
    gen.step_ms.push_back(step);
    ++gen.decode_calls;
    keep(logits);
    ++pos;
  }
  return gen;
}

std::string ids_text(const std::vector<int64_t>& ids, const char* sep) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? sep : "") + std::to_string(ids[i]);
  return out;
}

using kiln::examples::median;

double per_second(double count, double ms) { return ms > 0 ? count * 1000.0 / ms : 0.0; }

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (int rc = parse_args(argc, argv, &opt); rc != 0) return rc < 0 ? 0 : rc;

  kiln::LoadBackendOptionsMap load_options;
  if (opt.threads > 0) {
    kiln::BackendOptions aoti;
    aoti.set("num_threads", opt.threads);
    load_options.set_options("aoti", aoti);
  }
  const auto l0 = Clock::now();
  auto opened = LlmSession::open(opt.program, load_options, opt.cuda_graphs);
  if (!opened.ok()) {
    std::fprintf(stderr, "kiln-llm: %s\n", kiln::last_error_message().c_str());
    return 1;
  }
  LlmSession& llm = **opened;
  const double load_ms = ms_since(l0);

  std::vector<int64_t> prompt = opt.prompt;
  if (prompt.empty()) {
    // A reproducible random prompt: the model's weights are random too.
    std::mt19937_64 rng(opt.sampling.seed ^ 0x9e3779b97f4a7c15ull);
    for (int64_t i = 0; i < opt.prompt_len; ++i)
      prompt.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(llm.vocab_size())));
  }
  if (static_cast<int64_t>(prompt.size()) > llm.max_prompt()) {
    std::fprintf(stderr, "kiln-llm: the prompt has %zu tokens but the program's prefill takes at most %lld\n",
                 prompt.size(), static_cast<long long>(llm.max_prompt()));
    return 2;
  }

  for (int64_t i = 0; i < opt.warmup; ++i) {
    auto warm = generate(llm, opt, prompt, false);
    if (!warm.ok()) {
      std::fprintf(stderr, "kiln-llm: warm-up generation failed: %s\n", kiln::last_error_message().c_str());
      return 1;
    }
  }
  auto result = generate(llm, opt, prompt, !opt.logits_out.empty());
  if (!result.ok()) {
    std::fprintf(stderr, "kiln-llm: %s\n", kiln::last_error_message().c_str());
    return 1;
  }
  const Generation& gen = *result;

  if (!opt.logits_out.empty()) {
    // Replaced atomically: a reader of the old file keeps its bytes.
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(gen.logits.data()),
                                         gen.logits.size() * sizeof(float));
    if (kiln::replace_file_atomically(opt.logits_out, {bytes}) != kiln::Error::Ok) {
      std::fprintf(stderr, "kiln-llm: %s\n", kiln::last_error_message().c_str());
      return 1;
    }
  }

  const double prefill_tps = per_second(static_cast<double>(prompt.size()), gen.prefill_ms);
  const double decode_tps = per_second(static_cast<double>(gen.decode_calls), gen.decode_ms);
  const Sampler sampler(opt.sampling);
  std::string cache_shape = "[";  // appended, not "[" + ...: GCC 12 warns falsely (-Wrestrict) on that
  cache_shape += ids_text(llm.cache_shape(), ", ");
  cache_shape += "]";
  if (opt.json) {
    std::printf(
        "{\"device\": \"%s\", \"cache_dtype\": \"%s\", \"cache_shape\": %s, \"vocab_size\": %lld, "
        "\"prompt\": [%s], \"tokens\": [%s], \"stopped_by\": \"%s\", \"sampling\": \"%s\", "
        "\"load_ms\": %.3f, \"prefill_ms\": %.4f, \"prefill_tokens_per_s\": %.2f, \"decode_calls\": %lld, "
        "\"decode_ms\": %.4f, \"decode_tokens_per_s\": %.2f, \"decode_step_median_ms\": %.4f, "
        "\"sampling_ms\": %.4f, \"cuda_graphs\": %s}\n",
        kiln::device_string(llm.device()).c_str(), kiln::dtype_name(llm.cache_dtype()), cache_shape.c_str(),
        static_cast<long long>(llm.vocab_size()), ids_text(prompt, ", ").c_str(),
        ids_text(gen.tokens, ", ").c_str(), gen.stopped_by.c_str(), sampler.describe().c_str(), load_ms,
        gen.prefill_ms, prefill_tps, static_cast<long long>(gen.decode_calls), gen.decode_ms, decode_tps,
        median(gen.step_ms), gen.sampling_ms, llm.decode_uses_cuda_graphs() ? "true" : "false");
    return 0;
  }
  const double cache_kib = static_cast<double>(llm.cache_bytes()) / 1024.0;
  const std::string device = kiln::device_string(llm.device());
  std::printf("program %s: prefill + decode on %s, vocabulary %lld, KV cache 2 x %s %s (%.1f %s on %s)\n",
              opt.program.c_str(), device.c_str(), static_cast<long long>(llm.vocab_size()),
              kiln::dtype_name(llm.cache_dtype()), cache_shape.c_str(),
              cache_kib >= 1024.0 ? cache_kib / 1024.0 : cache_kib, cache_kib >= 1024.0 ? "MiB" : "KiB", device.c_str());
  std::printf("prompt (%zu tokens): %s\n", prompt.size(), ids_text(prompt, " ").c_str());
  std::printf("generated (%zu tokens, %s, stopped by %s): %s\n", gen.tokens.size(), sampler.describe().c_str(),
              gen.stopped_by.c_str(), ids_text(gen.tokens, " ").c_str());
  std::printf("load %.1f ms\n", load_ms);
  std::printf("prefill: %zu tokens in %.2f ms = %.1f tokens/s\n", prompt.size(), gen.prefill_ms, prefill_tps);
  std::printf("decode:  %lld tokens in %.2f ms = %.1f tokens/s (median step %.3f ms; sampling %.3f ms in all)%s\n",
              static_cast<long long>(gen.decode_calls), gen.decode_ms, decode_tps, median(gen.step_ms),
              gen.sampling_ms, llm.decode_uses_cuda_graphs() ? ", CUDA graphs" : "");
  return 0;
}
