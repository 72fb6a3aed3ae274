// kiln-embed: sentence embeddings with an exported all-MiniLM-L6-v2 (or any
// BERT-style program taking input_ids + attention_mask and returning one
// unit-length embedding per sentence). Tokenizes in C++ with the model's own
// vocab.txt, runs the program with Kiln, prints every embedding (first dims and
// norm) and the cosine similarity matrix, with timings.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "bert_tokenizer.h"
#include "kiln/module.h"
#include "example_util.h"

namespace {

using kiln::examples::Clock;
using kiln::embed::BertTokenizer;
using kiln::embed::TokenBatch;

const char kUsage[] =
    "usage: kiln-embed PROGRAM.kiln [--vocab VOCAB.txt] [--max-length N] [--repeat N] [--json]\n"
    "                  [SENTENCE ...]\n"
    "       kiln-embed --tokenize --vocab VOCAB.txt [--max-length N] [SENTENCE ...]\n"
    "\n"
    "Embeds each sentence (one per argument, or one per non-empty line of stdin when\n"
    "none is given) and prints the first dimensions and norm of each embedding, the\n"
    "cosine similarity matrix, and timings. Arguments after -- are all sentences.\n"
    "\n"
    "  --vocab FILE      WordPiece vocabulary (default: vocab.txt next to PROGRAM)\n"
    "  --max-length N    tokens per sentence, [CLS] and [SEP] included (default: the\n"
    "                    program's bound on the sequence dimension, at most 256, the\n"
    "                    length all-MiniLM-L6-v2 was trained with)\n"
    "  --repeat N        timed runs of the whole batch after the first (default 5)\n"
    "  --json            print token ids, embeddings, cosines and timings as JSON\n"
    "  --tokenize        only tokenize: print each sentence's token ids as JSON\n";

constexpr int64_t kDefaultMaxLength = 256;

struct Options {
  std::string program;
  std::string vocab;
  int64_t max_length = 0;  // 0: from the program
  int repeat = 5;
  bool json = false;
  bool tokenize_only = false;
  std::vector<std::string> sentences;
};

using kiln::examples::ms_since;
using kiln::examples::parse_int;

bool parse_args(int argc, char** argv, Options* o) {
  bool only_sentences = false;  // after "--"
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (only_sentences) {
      o->sentences.push_back(arg);
      continue;
    }
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kiln-embed: %s needs a value\n", arg.c_str());
        return false;
      }
      *out = argv[++i];
      return true;
    };
    std::string text;
    int64_t number = 0;
    if (arg == "--") {
      only_sentences = true;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--vocab") {
      if (!value(&o->vocab)) return false;
    } else if (arg == "--max-length" || arg == "--repeat") {
      const bool repeat = arg == "--repeat";
      if (!value(&text)) return false;
      if (!parse_int(text, &number) || number < (repeat ? 0 : 2) || number > 1000000) {
        std::fprintf(stderr, "kiln-embed: %s '%s' is not a valid count\n", arg.c_str(), text.c_str());
        return false;
      }
      if (repeat) {
        o->repeat = static_cast<int>(number);
      } else {
        o->max_length = number;
      }
    } else if (arg == "--json") {
      o->json = true;
    } else if (arg == "--tokenize") {
      o->tokenize_only = true;
    } else if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      std::fprintf(stderr, "kiln-embed: unknown option %s\n%s", arg.c_str(), kUsage);
      return false;
    } else {
      o->sentences.push_back(arg);
    }
  }
  if (o->tokenize_only) {
    if (o->vocab.empty()) {
      std::fprintf(stderr, "kiln-embed: --tokenize needs --vocab\n");
      return false;
    }
    return true;
  }
  if (o->sentences.empty()) {
    std::fputs(kUsage, stderr);
    return false;
  }
  o->program = o->sentences.front();
  o->sentences.erase(o->sentences.begin());
  if (o->vocab.empty()) {
    o->vocab = (std::filesystem::path(o->program).parent_path() / "vocab.txt").string();
  }
  return true;
}

std::vector<std::string> read_stdin_lines() {
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

void print_json_ids(const std::vector<std::vector<int32_t>>& ids) {
  std::printf("[");
  for (size_t i = 0; i < ids.size(); ++i) {
    std::printf("%s[", i ? ",\n " : "");
    for (size_t j = 0; j < ids[i].size(); ++j) std::printf("%s%d", j ? ", " : "", ids[i][j]);
    std::printf("]");
  }
  std::printf("]");
}

// The method's bounds on batch and sequence, from its input contract.
struct Bounds {
  int64_t max_batch = -1;  // -1: unbounded
  int64_t max_seq = -1;
};

bool check_contract(const kiln::MethodInfo& info, Bounds* bounds) {
  const bool ok = info.inputs.size() == 2 && info.outputs.size() == 1 &&
                  info.inputs[0].dtype == kiln::DType::Int64 && info.inputs[1].dtype == kiln::DType::Int64 &&
                  info.inputs[0].dims.size() == 2 && info.outputs[0].dims.size() == 2 &&
                  info.outputs[0].dtype == kiln::DType::Float32;
  if (!ok) {
    std::fprintf(stderr,
                 "kiln-embed: method 'forward' of this program is not an embedder: expected inputs "
                 "(input_ids int64[batch, seq], attention_mask int64[batch, seq]) and one float32[batch, dim] "
                 "output\n");
    return false;
  }
  const kiln::DimSpec& batch = info.inputs[0].dims[0];
  const kiln::DimSpec& seq = info.inputs[0].dims[1];
  bounds->max_batch = batch.dynamic ? batch.max : batch.size;
  bounds->max_seq = seq.dynamic ? seq.max : seq.size;
  return true;
}

// Runs one padded batch; returns a host float32 [batch, dim] tensor.
kiln::Result<kiln::Tensor> embed_batch(kiln::Module& module, TokenBatch& batch) {
  const int64_t sizes[] = {batch.batch, batch.seq};
  const int64_t strides[] = {batch.seq, 1};
  auto ids = kiln::Tensor::from_blob(batch.input_ids.data(), sizes, strides, kiln::DType::Int64);
  if (!ids) return ids.error();
  auto mask = kiln::Tensor::from_blob(batch.attention_mask.data(), sizes, strides, kiln::DType::Int64);
  if (!mask) return mask.error();
  auto outputs = module.forward({*ids, *mask});
  if (!outputs) return outputs.error();
  kiln::Tensor out = outputs->front();
  if (out.dim() != 2 || out.size(0) != batch.batch || out.dtype() != kiln::DType::Float32) {
    return kiln::set_error(kiln::Error::InvalidProgram, "the program returned " + out.describe() +
                                                            ", not float32[" + std::to_string(batch.batch) +
                                                            ", dim]");
  }
  if (out.device().is_cpu() && out.is_contiguous()) return out;
  // Device outputs (keep_outputs_on_device) or strided ones: one host copy.
  auto host = kiln::Tensor::empty(out.sizes(), out.dtype());
  if (!host) return host.error();
  KILN_RETURN_IF_ERROR(kiln::copy_tensor(*host, out));
  return *host;
}

int fail(const char* what) {
  std::fprintf(stderr, "kiln-embed: %s: %s\n", what, kiln::last_error_message().c_str());
  return 1;
}

using kiln::examples::median;

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse_args(argc, argv, &options)) return 2;
  if (options.sentences.empty()) options.sentences = read_stdin_lines();
  if (options.sentences.empty()) {
    std::fprintf(stderr, "kiln-embed: no sentences (give them as arguments or one per line on stdin)\n");
    return 2;
  }

  std::string error;
  if (options.tokenize_only) {
    auto tokenizer = BertTokenizer::load(options.vocab, &error);
    if (!tokenizer) {
      std::fprintf(stderr, "kiln-embed: %s\n", error.c_str());
      return 1;
    }
    const size_t max_length = static_cast<size_t>(options.max_length ? options.max_length : kDefaultMaxLength);
    std::vector<std::vector<int32_t>> ids;
    for (const auto& s : options.sentences) ids.push_back(tokenizer->encode(s, max_length));
    print_json_ids(ids);
    std::printf("\n");
    return 0;
  }

  const auto load_start = Clock::now();
  kiln::Module module(options.program);
  if (module.load() != kiln::Error::Ok) return fail("cannot load the program");
  auto info = module.method_meta("forward");
  if (!info) return fail("the program has no usable 'forward' method");
  Bounds bounds;
  if (!check_contract(*info, &bounds)) return 1;
  if (module.load_method("forward") != kiln::Error::Ok) return fail("cannot load method 'forward'");
  const double load_ms = ms_since(load_start);
  auto tokenizer = BertTokenizer::load(options.vocab, &error);
  if (!tokenizer) {
    std::fprintf(stderr, "kiln-embed: %s\n", error.c_str());
    return 1;
  }

  int64_t max_length = options.max_length;
  if (max_length == 0) max_length = bounds.max_seq > 0 ? std::min(bounds.max_seq, kDefaultMaxLength) : kDefaultMaxLength;
  if (bounds.max_seq > 0 && max_length > bounds.max_seq) {
    std::fprintf(stderr, "kiln-embed: --max-length %lld exceeds the program's sequence bound %lld\n",
                 static_cast<long long>(max_length), static_cast<long long>(bounds.max_seq));
    return 2;
  }

  const auto tokenize_start = Clock::now();
  std::vector<std::vector<int32_t>> ids;
  for (const auto& s : options.sentences) ids.push_back(tokenizer->encode(s, static_cast<size_t>(max_length)));
  const double tokenize_ms = ms_since(tokenize_start);

  // Sentences beyond the program's batch bound go in further batches.
  const size_t chunk = bounds.max_batch > 0 ? static_cast<size_t>(bounds.max_batch) : ids.size();
  std::vector<TokenBatch> batches;
  for (size_t first = 0; first < ids.size(); first += chunk) {
    const size_t last = std::min(ids.size(), first + chunk);
    batches.push_back(tokenizer->pad({ids.begin() + static_cast<std::ptrdiff_t>(first),
                                      ids.begin() + static_cast<std::ptrdiff_t>(last)}));
  }

  std::vector<std::vector<float>> embeddings;
  std::vector<double> run_ms;
  for (int run = 0; run <= options.repeat; ++run) {
    const auto start = Clock::now();
    std::vector<std::vector<float>> rows;
    for (TokenBatch& batch : batches) {
      auto out = embed_batch(module, batch);
      if (!out) return fail("running the model failed");
      const int64_t dim = out->size(1);
      const float* data = out->data<float>();
      for (int64_t r = 0; r < out->size(0); ++r) rows.emplace_back(data + r * dim, data + (r + 1) * dim);
    }
    run_ms.push_back(ms_since(start));
    embeddings = std::move(rows);
  }
  const double first_ms = run_ms.front();
  const double median_ms = median({run_ms.begin() + 1, run_ms.end()});

  const size_t n = embeddings.size();
  std::vector<double> norms(n);
  for (size_t i = 0; i < n; ++i) {
    double sq = 0;
    for (float v : embeddings[i]) sq += static_cast<double>(v) * v;
    norms[i] = std::sqrt(sq);
  }
  std::vector<std::vector<double>> cosine(n, std::vector<double>(n));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double dot = 0;
      for (size_t k = 0; k < embeddings[i].size(); ++k) dot += static_cast<double>(embeddings[i][k]) * embeddings[j][k];
      cosine[i][j] = dot / std::max(norms[i] * norms[j], 1e-12);
    }
  }

  if (options.json) {
    std::printf("{\"token_ids\": ");
    print_json_ids(ids);
    std::printf(",\n\"embeddings\": [");
    for (size_t i = 0; i < n; ++i) {
      std::printf("%s[", i ? ",\n " : "");
      for (size_t k = 0; k < embeddings[i].size(); ++k) std::printf("%s%.9g", k ? ", " : "", embeddings[i][k]);
      std::printf("]");
    }
    std::printf("],\n\"cosine\": [");
    for (size_t i = 0; i < n; ++i) {
      std::printf("%s[", i ? ", " : "");
      for (size_t j = 0; j < n; ++j) std::printf("%s%.9g", j ? ", " : "", cosine[i][j]);
      std::printf("]");
    }
    std::printf("],\n\"load_ms\": %.3f, \"tokenize_ms\": %.3f, \"first_run_ms\": %.3f, \"median_run_ms\": %.3f, "
                "\"runs\": %d}\n",
                load_ms, tokenize_ms, first_ms, median_ms, options.repeat);
    return 0;
  }

  std::printf("program %s (forward on %s), vocabulary %s (%zu tokens), max length %lld\n", options.program.c_str(),
              info->device.empty() ? "cpu" : info->device.c_str(), options.vocab.c_str(),
              tokenizer->vocabulary().size(), static_cast<long long>(max_length));
  for (size_t i = 0; i < n; ++i) {
    std::string shown = options.sentences[i];
    if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
    std::printf("[%zu] %zu tokens  \"%s\"\n     embedding[0:6] = [", i, ids[i].size(), shown.c_str());
    for (size_t k = 0; k < std::min<size_t>(6, embeddings[i].size()); ++k) {
      std::printf("%s%+.5f", k ? ", " : "", embeddings[i][k]);
    }
    std::printf(", ...]  dim %zu  norm %.6f\n", embeddings[i].size(), norms[i]);
  }
  std::printf("cosine similarity:\n     ");
  for (size_t j = 0; j < n; ++j) std::printf("    [%zu]", j);
  std::printf("\n");
  for (size_t i = 0; i < n; ++i) {
    std::printf("[%zu] ", i);
    for (size_t j = 0; j < n; ++j) std::printf(" %7.4f", cosine[i][j]);
    std::printf("\n");
  }
  std::printf("load %.1f ms, tokenize %.2f ms, first run %.1f ms, median of %d runs %.1f ms (%zu sentence%s, %zu batch%s)\n",
              load_ms, tokenize_ms, first_ms, options.repeat, median_ms, n, n == 1 ? "" : "s", batches.size(),
              batches.size() == 1 ? "" : "es");
  return 0;
}
