// kiln-asr: speech recognition with an exported Whisper program (see
// export_asr.py) and no Python: reads a 16-bit PCM WAV file, resamples it to
// 16 kHz if needed, computes Whisper's log-mel front end in C++, runs the
// encoder and a greedy decoder loop with Kiln, and prints the text with
// timings and the real-time factor. Audio longer than 30 s is cut into
// consecutive 30 s windows transcribed one after the other.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "bpe_vocab.h"
#include "log_mel.h"
#include "resample.h"
#include "wav_reader.h"
#include "whisper_program.h"
#include "example_util.h"
#include "program/atomic_file.h"

namespace {

using kiln::examples::Clock;
using namespace kiln::asr;

const char kUsage[] =
    "usage: kiln-asr PROGRAM.kiln [options] AUDIO.wav [AUDIO.wav ...]\n"
    "\n"
    "Transcribes each 16-bit PCM WAV file (any sample rate: resampled to 16 kHz;\n"
    "several channels are averaged) and prints the text, timings and the\n"
    "real-time factor.\n"
    "\n"
    "  --vocab FILE        BPE vocabulary (default: whisper-vocab.txt next to PROGRAM)\n"
    "  --max-tokens N      generated tokens per 30 s window (default 224)\n"
    "  --repeat N          transcribe each file N more times and report the median (default 0)\n"
    "  --threads N         CPU threads of the compiled code (aoti.num_threads; default: the\n"
    "                      runtime's, one per core)\n"
    "  --no-cuda-graphs    run the decoder step eagerly (a CUDA program's step replays\n"
    "                      as a CUDA graph by default)\n"
    "  --json              print ids, text and timings as JSON\n"
    "  --dump-mel FILE     write the log-mel of the first file's windows as .npy\n"
    "                      float32[windows, n_mels, n_frames]\n"
    "  --dump-audio FILE   write the first file's 16 kHz samples as .npy float32[n]\n"
    "  --mel-only          compute the front end only (with --dump-mel/--dump-audio;\n"
    "                      PROGRAM is not loaded and may be omitted)\n";

struct Options {
  std::string program, vocab, dump_mel, dump_audio;
  std::vector<std::string> files;
  int64_t max_tokens = 224;
  int repeat = 0;
  int64_t threads = 0;  // 0: the runtime's default
  bool json = false, cuda_graphs = true, mel_only = false;
};

using kiln::examples::ms_since;
using kiln::examples::parse_int;

bool parse_args(int argc, char** argv, Options* o) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kiln-asr: %s needs a value\n", arg.c_str());
        return false;
      }
      *out = argv[++i];
      return true;
    };
    std::string text;
    int64_t number = 0;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--vocab") {
      if (!value(&o->vocab)) return false;
    } else if (arg == "--dump-mel") {
      if (!value(&o->dump_mel)) return false;
    } else if (arg == "--dump-audio") {
      if (!value(&o->dump_audio)) return false;
    } else if (arg == "--threads") {
      if (!value(&text)) return false;
      if (!parse_int(text, &number) || number < 1 || number > 4096) {
        std::fprintf(stderr, "kiln-asr: --threads '%s' is not a thread count (1 or more)\n", text.c_str());
        return false;
      }
      o->threads = number;
    } else if (arg == "--max-tokens" || arg == "--repeat") {
      if (!value(&text)) return false;
      if (!parse_int(text, &number) || number < 0 || number > 100000) {
        std::fprintf(stderr, "kiln-asr: %s '%s' is not a valid count\n", arg.c_str(), text.c_str());
        return false;
      }
      if (arg == "--repeat") {
        o->repeat = static_cast<int>(number);
      } else {
        o->max_tokens = number;
      }
    } else if (arg == "--json") {
      o->json = true;
    } else if (arg == "--no-cuda-graphs") {
      o->cuda_graphs = false;
    } else if (arg == "--mel-only") {
      o->mel_only = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      std::fprintf(stderr, "kiln-asr: unknown option %s\n%s", arg.c_str(), kUsage);
      return false;
    } else {
      positional.push_back(arg);
    }
  }
  if (!o->mel_only || (!positional.empty() && positional.front().size() > 5 &&
                       positional.front().compare(positional.front().size() - 5, 5, ".kiln") == 0)) {
    if (positional.empty()) {
      std::fputs(kUsage, stderr);
      return false;
    }
    o->program = positional.front();
    positional.erase(positional.begin());
  }
  o->files = positional;
  if (o->files.empty()) {
    std::fprintf(stderr, "kiln-asr: no audio files given\n%s", kUsage);
    return false;
  }
  if (o->vocab.empty() && !o->program.empty())
    o->vocab = (std::filesystem::path(o->program).parent_path() / "whisper-vocab.txt").string();
  return true;
}

// A little-endian float32 .npy file (format 1.0).
bool write_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data, std::string* error) {
  std::string dims;
  int64_t count = 1;
  for (int64_t d : shape) {
    dims += std::to_string(d) + ",";
    count *= d;
  }
  if (shape.size() > 1) dims.pop_back();
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  const auto header_len = static_cast<uint16_t>(header.size());
  const uint8_t preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(header_len & 0xFF),
                                static_cast<uint8_t>(header_len >> 8)};
  // Replaced atomically: a reader of the old file keeps its bytes.
  const kiln::Error written = kiln::replace_file_atomically(
      path, {std::span<const uint8_t>(preamble),
             std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(header.data()), header.size()),
             std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data),
                                      static_cast<size_t>(count) * sizeof(float))});
  if (written != kiln::Error::Ok) {
    *error = kiln::last_error_message();
    return false;
  }
  return true;
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(' ');
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(' ') - a + 1);
}

using kiln::examples::median;

struct FileResult {
  std::string path;
  double audio_seconds = 0;
  int source_rate = 0;
  std::vector<WindowResult> windows;
  std::string text;
  double read_ms = 0, frontend_ms = 0, encoder_ms = 0, decoder_ms = 0, total_ms = 0;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "kiln-asr: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse_args(argc, argv, &options)) return 2;
  std::string error;
  constexpr int kModelRate = 16000;
  const LogMel log_mel;
  const size_t window = log_mel.window_samples();
  const size_t mel_values = static_cast<size_t>(log_mel.config().n_mels) * log_mel.config().n_frames;

  WhisperProgram program;
  BpeVocab vocab;
  double load_ms = 0;
  if (!options.mel_only) {
    const auto start = Clock::now();
    if (!program.load(options.program, options.cuda_graphs, options.threads, &error)) return fail(error);
    load_ms = ms_since(start);
    if (!vocab.load(options.vocab, &error)) return fail(error);
    if (static_cast<int64_t>(vocab.size()) != program.spec().vocab_size)
      return fail(options.vocab + " has " + std::to_string(vocab.size()) + " tokens, the program's vocabulary " +
                  std::to_string(program.spec().vocab_size));
    if (program.spec().n_mels != log_mel.config().n_mels || program.spec().n_frames != log_mel.config().n_frames)
      return fail("the program's encoder takes " + std::to_string(program.spec().n_mels) + " x " +
                  std::to_string(program.spec().n_frames) + " log-mel frames, the front end makes 80 x 3000");
  }

  std::vector<FileResult> results;
  for (size_t f = 0; f < options.files.size(); ++f) {
    std::vector<FileResult> runs;
    for (int run = 0; run <= options.repeat; ++run) {
      FileResult r;
      r.path = options.files[f];
      const auto total_start = Clock::now();
      Audio audio;
      if (!read_wav(r.path, &audio, &error)) return fail(error);
      r.source_rate = audio.sample_rate;
      r.read_ms = ms_since(total_start);
      auto start = Clock::now();
      std::vector<float> samples = resample(audio.samples, audio.sample_rate, kModelRate);
      r.audio_seconds = static_cast<double>(samples.size()) / kModelRate;
      const size_t n_windows = std::max<size_t>(1, (samples.size() + window - 1) / window);
      std::vector<float> mels(n_windows * mel_values);
      for (size_t w = 0; w < n_windows; ++w) {
        const size_t first = w * window;
        const size_t count = first < samples.size() ? std::min(window, samples.size() - first) : 0;
        log_mel.compute(samples.data() + std::min(first, samples.size()), count, mels.data() + w * mel_values);
      }
      r.frontend_ms = ms_since(start);
      if (f == 0 && run == 0) {
        if (!options.dump_audio.empty() &&
            !write_npy(options.dump_audio, {static_cast<int64_t>(samples.size())}, samples.data(), &error))
          return fail(error);
        if (!options.dump_mel.empty() &&
            !write_npy(options.dump_mel,
                       {static_cast<int64_t>(n_windows), log_mel.config().n_mels, log_mel.config().n_frames},
                       mels.data(), &error))
          return fail(error);
      }
      if (options.mel_only) {
        runs.push_back(r);
        continue;
      }
      for (size_t w = 0; w < n_windows; ++w) {
        std::vector<float> mel(mels.begin() + static_cast<std::ptrdiff_t>(w * mel_values),
                               mels.begin() + static_cast<std::ptrdiff_t>((w + 1) * mel_values));
        WindowResult wr;
        if (!program.transcribe(mel, options.max_tokens, &wr, &error)) return fail(r.path + ": " + error);
        r.encoder_ms += wr.encoder_ms;
        r.decoder_ms += wr.decoder_ms;
        const std::string piece = trim(vocab.decode(wr.ids, program.spec().token_eot));
        if (!piece.empty()) r.text += (r.text.empty() ? "" : " ") + piece;
        r.windows.push_back(std::move(wr));
      }
      r.total_ms = ms_since(total_start);
      runs.push_back(std::move(r));
    }
    // Report the run with the median total time (the first run includes warm-up).
    std::vector<double> totals;
    for (size_t i = runs.size() > 1 ? 1 : 0; i < runs.size(); ++i) totals.push_back(runs[i].total_ms);
    const double med = median(totals);
    FileResult chosen = runs.back();
    for (size_t i = runs.size() > 1 ? 1 : 0; i < runs.size(); ++i)
      if (runs[i].total_ms == med || std::abs(runs[i].total_ms - med) < std::abs(chosen.total_ms - med)) chosen = runs[i];
    chosen.total_ms = med;
    results.push_back(std::move(chosen));
  }
  if (options.mel_only) return 0;

  if (options.json) {
    std::printf("{\"device\": %s, \"load_ms\": %.3f, \"files\": [", json_string(program.device()).c_str(), load_ms);
    for (size_t i = 0; i < results.size(); ++i) {
      const FileResult& r = results[i];
      std::printf("%s\n {\"path\": %s, \"text\": %s, \"audio_seconds\": %.6f, \"source_rate\": %d, \"windows\": [",
                  i ? "," : "", json_string(r.path).c_str(), json_string(r.text).c_str(), r.audio_seconds,
                  r.source_rate);
      for (size_t w = 0; w < r.windows.size(); ++w) {
        std::printf("%s{\"ids\": [", w ? ", " : "");
        for (size_t k = 0; k < r.windows[w].ids.size(); ++k)
          std::printf("%s%lld", k ? ", " : "", static_cast<long long>(r.windows[w].ids[k]));
        std::printf("], \"steps\": %d}", r.windows[w].steps);
      }
      std::printf("], \"frontend_ms\": %.3f, \"encoder_ms\": %.3f, \"decoder_ms\": %.3f, \"total_ms\": %.3f, "
                  "\"rtf\": %.6f}",
                  r.frontend_ms, r.encoder_ms, r.decoder_ms, r.total_ms, r.total_ms / 1000.0 / r.audio_seconds);
    }
    std::printf("]}\n");
    return 0;
  }

  std::printf("program %s (whisper tiny.en, %s), vocabulary %s (%zu tokens), load %.1f ms\n",
              options.program.c_str(), program.device().c_str(), options.vocab.c_str(), vocab.size(), load_ms);
  for (const FileResult& r : results) {
    int steps = 0;
    for (const auto& w : r.windows) steps += w.steps;
    std::printf("%s (%.2f s, %d Hz%s)\n  %s\n", r.path.c_str(), r.audio_seconds, r.source_rate,
                r.source_rate == kModelRate ? "" : " -> 16000 Hz", r.text.c_str());
    std::printf("  front end %.1f ms, encoder %.1f ms, decoder %.1f ms (%d steps), total %.1f ms: "
                "real-time factor %.3f (%.1fx faster than real time)\n",
                r.frontend_ms, r.encoder_ms, r.decoder_ms, steps, r.total_ms, r.total_ms / 1000.0 / r.audio_seconds,
                r.audio_seconds * 1000.0 / r.total_ms);
  }
  return 0;
}
