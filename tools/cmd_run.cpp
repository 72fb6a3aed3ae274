// `kiln run`: load a program, run one method on given or random inputs, print
// the outputs and timings, optionally save the outputs as .npy.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "cli_common.h"
#include "commands.h"
#include "core/half_float.h"
#include "kiln/backend_options.h"
#include "kiln/module.h"
#include "npy.h"
#include "tensor_util.h"

namespace kiln::tools {

const char kRunUsage[] =
    "usage: kiln run PROGRAM.kiln [--method NAME] [--input X.npy ...] [--output-dir DIR]\n"
    "                [--data FILE ...] [--repeat N] [--option BACKEND.KEY=VALUE ...]\n"
    "                [--seed S] [--int-range LO,HI] [--dim SYMBOL=SIZE ...]\n"
    "\n"
    "Loads the program, runs one method and prints each output's name, dtype and\n"
    "shape with its min/max/mean, then the load time, the first call's time and\n"
    "the median of N further calls.\n"
    "\n"
    "  --method NAME        method to run (default: forward)\n"
    "  --input X.npy        one per method input, in order (repeat the option).\n"
    "                       Without any, inputs are random from the method's\n"
    "                       contract: floats ~ N(0,1), integers uniform in\n"
    "                       [LO, HI) (default [0, 10): keep index inputs such as\n"
    "                       token ids below the vocabulary size), bools 0/1.\n"
    "                       Dynamic dimensions take the example size recorded at\n"
    "                       export, clamped to their bounds.\n"
    "  --output-dir DIR     write output i as DIR/out_<i>_<name>.npy (bfloat16 and\n"
    "                       float8 outputs are written as float32: numpy lacks them)\n"
    "  --data FILE          external data file of the program (repeat, in order)\n"
    "  --repeat N           timed calls after the first (default 10; 0: none)\n"
    "  --option B.K=V       backend load option, e.g. aoti.num_threads=4; V is\n"
    "                       true/false, an integer, or else a string\n"
    "  --seed S             seed of the random inputs (default 0)\n"
    "  --int-range LO,HI    range of random integer inputs (default 0,10)\n"
    "  --dim SYMBOL=SIZE    size of a dynamic dimension for random inputs\n";

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

bool parse_int(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

// "aoti.num_threads=4" -> options["aoti"].set("num_threads", 4).
bool parse_backend_option(const std::string& text, std::map<std::string, BackendOptions>* options,
                          std::string* error) {
  const size_t dot = text.find('.');
  const size_t eq = text.find('=');
  if (dot == std::string::npos || eq == std::string::npos || dot == 0 || eq < dot + 2) {
    *error = "--option '" + text + "' is not BACKEND.KEY=VALUE";
    return false;
  }
  const std::string backend = text.substr(0, dot);
  const std::string key = text.substr(dot + 1, eq - dot - 1);
  const std::string value = text.substr(eq + 1);
  BackendOptions& target = (*options)[backend];
  int64_t number = 0;
  if (value == "true") {
    target.set(key, true);
  } else if (value == "false") {
    target.set(key, false);
  } else if (parse_int(value, &number)) {
    target.set(key, number);
  } else {
    target.set(key, std::string_view(value));
  }
  return true;
}

struct RandomSpec {
  uint64_t seed = 0;
  int64_t int_low = 0;
  int64_t int_high = 10;
  std::map<std::string, int64_t> dims;  // --dim overrides by symbol
};

std::vector<int64_t> shape_for(const TensorSpec& spec, const RandomSpec& random) {
  std::vector<int64_t> shape;
  for (const auto& dim : spec.dims) {
    if (!dim.dynamic) {
      shape.push_back(dim.size);
      continue;
    }
    int64_t size = dim.size;
    if (auto it = random.dims.find(dim.name); it != random.dims.end()) {
      size = it->second;  // the user asked for it; the Module reports it if out of bounds
    } else {
      size = std::max(size, dim.min);
      if (dim.max >= 0) size = std::min(size, dim.max);
    }
    shape.push_back(size);
  }
  return shape;
}

template <typename T>
void fill_ints(const Tensor& t, std::mt19937_64& rng, int64_t low, int64_t high) {
  std::uniform_int_distribution<int64_t> dist(low, high - 1);
  T* data = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) data[i] = static_cast<T>(dist(rng));
}

Result<Tensor> random_input(const TensorSpec& spec, const RandomSpec& random, std::mt19937_64& rng) {
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(shape_for(spec, random), spec.dtype));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t n = t.numel();
  switch (spec.dtype) {
    case DType::Float32:
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = normal(rng);
      break;
    case DType::Float64:
      for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = normal(rng);
      break;
    case DType::Float16:
      for (int64_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = float_to_half(normal(rng));
      break;
    case DType::BFloat16:
      for (int64_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = float_to_bf16(normal(rng));
      break;
    case DType::Bool: {
      std::bernoulli_distribution coin(0.5);
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = coin(rng) ? 1 : 0;
      break;
    }
    case DType::Int8: fill_ints<int8_t>(t, rng, random.int_low, random.int_high); break;
    case DType::Int16: fill_ints<int16_t>(t, rng, random.int_low, random.int_high); break;
    case DType::Int32: fill_ints<int32_t>(t, rng, random.int_low, random.int_high); break;
    case DType::Int64: fill_ints<int64_t>(t, rng, random.int_low, random.int_high); break;
    case DType::UInt8: fill_ints<uint8_t>(t, rng, random.int_low, random.int_high); break;
    case DType::UInt16: fill_ints<uint16_t>(t, rng, random.int_low, random.int_high); break;
    case DType::UInt32: fill_ints<uint32_t>(t, rng, random.int_low, random.int_high); break;
    case DType::UInt64: fill_ints<uint64_t>(t, rng, random.int_low, random.int_high); break;
    default:
      return set_error(Error::NotSupported, "input '" + spec.name + "': cannot make random " +
                                                dtype_name(spec.dtype) + " values; pass --input files");
  }
  return t;
}

std::string shape_string(const std::vector<int64_t>& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

// A file-name-safe version of an output name.
std::string safe_name(const std::string& name) {
  std::string safe;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    safe.push_back(ok ? c : '_');
  }
  return safe.empty() ? std::string("output") : safe;
}

// "min -1.2 max 3.4 mean 0.01" over a float32 copy; NaNs are counted apart.
Result<std::string> summary(const Tensor& output) {
  if (output.numel() == 0) return std::string("(empty)");
  KILN_ASSIGN_OR_RETURN(Tensor f, to_float32(output));
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nans = 0, finite = 0;
  for (int64_t i = 0; i < f.numel(); ++i) {
    const float v = f.data<float>()[i];
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, static_cast<double>(v));
    hi = std::max(hi, static_cast<double>(v));
    sum += v;
    ++finite;
  }
  char text[160];
  std::snprintf(text, sizeof(text), "min %.6g  max %.6g  mean %.6g", lo, hi, finite ? sum / finite : NAN);
  std::string result = text;
  if (nans) result += "  (" + std::to_string(nans) + " NaN)";
  return result;
}

}  // namespace

int run_command(std::span<const std::string> args) {
  static constexpr OptionSpec kOptions[] = {
      {"--help", false},  {"--method", true}, {"--input", true},  {"--output-dir", true},
      {"--data", true},   {"--repeat", true}, {"--option", true}, {"--seed", true},
      {"--int-range", true}, {"--dim", true}};
  ParsedArgs parsed;
  std::string problem;
  if (!parse_args(args, kOptions, &parsed, &problem)) return usage_error("run", problem, kRunUsage);
  if (parsed.has("--help")) {
    std::fputs(kRunUsage, stdout);
    return kExitOk;
  }
  if (parsed.positional.size() != 1)
    return usage_error("run", parsed.positional.empty() ? "missing the program file" : "expected exactly one program file",
                       kRunUsage);
  const std::string& path = parsed.positional[0];
  const std::string method = parsed.last("--method").value_or("forward");

  int64_t repeat = 10;
  if (auto text = parsed.last("--repeat"); text && (!parse_int(*text, &repeat) || repeat < 0))
    return usage_error("run", "--repeat needs a non-negative integer, got '" + *text + "'", kRunUsage);
  RandomSpec random;
  if (auto text = parsed.last("--seed")) {
    int64_t seed = 0;
    if (!parse_int(*text, &seed)) return usage_error("run", "--seed needs an integer, got '" + *text + "'", kRunUsage);
    random.seed = static_cast<uint64_t>(seed);
  }
  if (auto text = parsed.last("--int-range")) {
    const size_t comma = text->find(',');
    if (comma == std::string::npos || !parse_int(text->substr(0, comma), &random.int_low) ||
        !parse_int(text->substr(comma + 1), &random.int_high) || random.int_low >= random.int_high)
      return usage_error("run", "--int-range needs LO,HI with LO < HI, got '" + *text + "'", kRunUsage);
  }
  for (const auto& text : parsed.all("--dim")) {
    const size_t eq = text.find('=');
    int64_t size = 0;
    if (eq == std::string::npos || eq == 0 || !parse_int(text.substr(eq + 1), &size) || size < 0)
      return usage_error("run", "--dim needs SYMBOL=SIZE, got '" + text + "'", kRunUsage);
    random.dims[text.substr(0, eq)] = size;
  }
  std::map<std::string, BackendOptions> per_backend;
  for (const auto& text : parsed.all("--option"))
    if (!parse_backend_option(text, &per_backend, &problem)) return usage_error("run", problem, kRunUsage);
  LoadBackendOptionsMap options;
  for (auto& [backend, values] : per_backend) options.set_options(backend, std::move(values));

  // Load: map and verify the program, then the method (library, weights).
  Module module(path, parsed.all("--data"));
  const auto load_start = Clock::now();
  if (Error e = module.load(options); e != Error::Ok) return runtime_error(e);
  const double program_ms = ms_since(load_start);
  auto info = module.method_meta(method);
  if (!info.ok()) {
    std::string names;
    if (auto all = module.method_names(); all.ok())
      for (const auto& name : *all) names += (names.empty() ? "" : ", ") + name;
    set_error(info.error(), path + ": no method '" + method + "' (methods: " + names + ")");
    return runtime_error(info.error());
  }
  const auto method_start = Clock::now();
  if (Error e = module.load_method(method); e != Error::Ok) return runtime_error(e);
  const double method_ms = ms_since(method_start);

  auto device = parse_device(info->device.empty() ? "cpu" : info->device);
  if (!device) {
    set_error(Error::InvalidProgram, path + ": method '" + method + "' names unknown device '" + info->device + "'");
    return runtime_error(Error::InvalidProgram);
  }
  std::printf("%s: method %s (backend %s, device %s)\n", path.c_str(), method.c_str(), info->backend.c_str(),
              info->device.c_str());

  // Inputs: from .npy files, or random from the contract.
  std::vector<Tensor> inputs;
  const auto input_files = parsed.all("--input");
  if (!input_files.empty() && input_files.size() != info->inputs.size()) {
    set_error(Error::InvalidArgument, "method '" + method + "' takes " + std::to_string(info->inputs.size()) +
                                          " inputs but " + std::to_string(input_files.size()) +
                                          " --input files were given");
    return runtime_error(Error::InvalidArgument);
  }
  std::mt19937_64 rng(random.seed);
  for (size_t i = 0; i < info->inputs.size(); ++i) {
    const TensorSpec& spec = info->inputs[i];
    Result<Tensor> input = input_files.empty() ? random_input(spec, random, rng) : read_npy(input_files[i]);
    if (!input.ok()) return runtime_error(input.error());
    // Inputs of any layout (a Fortran-order file, say) go to execute as they
    // are: Kiln lays them out as the method was compiled. Device methods get
    // their inputs on the device once here, so the timed calls below run on
    // device-resident inputs, as an application keeping its tensors there would.
    if (!(input->device() == *device)) {
      input = contiguous_copy(*input, *device);
      if (!input.ok()) return runtime_error(input.error());
    }
    std::printf("input %zu %s: %s%s  (%s)\n", i, spec.name.c_str(), dtype_name(input->dtype()),
                shape_string(input->sizes()).c_str(),
                input_files.empty() ? "random" : input_files[i].c_str());
    inputs.push_back(std::move(*input));
  }

  // First call (it may include one-time work such as kernel autotuning), then
  // the timed repeats.
  const auto first_start = Clock::now();
  auto outputs = module.execute(method, inputs);
  const double first_ms = ms_since(first_start);
  if (!outputs.ok()) return runtime_error(outputs.error());
  std::vector<double> times;
  for (int64_t r = 0; r < repeat; ++r) {
    const auto start = Clock::now();
    auto again = module.execute(method, inputs);
    times.push_back(ms_since(start));
    if (!again.ok()) return runtime_error(again.error());
  }

  std::error_code ec;
  const auto output_dir = parsed.last("--output-dir");
  if (output_dir && !std::filesystem::is_directory(*output_dir, ec)) {
    std::filesystem::create_directories(*output_dir, ec);
    if (ec) {
      set_error(Error::IoError, *output_dir + ": cannot create the output directory: " + ec.message());
      return runtime_error(Error::IoError);
    }
  }
  for (size_t i = 0; i < outputs->size(); ++i) {
    const Tensor& output = (*outputs)[i];
    const std::string name = i < info->outputs.size() && !info->outputs[i].name.empty()
                                 ? info->outputs[i].name
                                 : "output" + std::to_string(i);
    auto stats = summary(output);
    if (!stats.ok()) return runtime_error(stats.error());
    std::printf("output %zu %s: %s%s  %s\n", i, name.c_str(), dtype_name(output.dtype()),
                shape_string(output.sizes()).c_str(), stats->c_str());
    if (!output_dir) continue;
    const std::string file = (std::filesystem::path(*output_dir) / ("out_" + std::to_string(i) + "_" +
                                                                     safe_name(name) + ".npy")).string();
    Tensor to_write = output;
    if (!npy_descr(output.dtype())) {
      auto widened = to_float32(output);
      if (!widened.ok()) return runtime_error(widened.error());
      to_write = std::move(*widened);
      std::printf("  note: numpy has no %s; %s holds it converted to float32\n", dtype_name(output.dtype()),
                  file.c_str());
    }
    if (Error e = write_npy(file, to_write); e != Error::Ok) return runtime_error(e);
    std::printf("  wrote %s\n", file.c_str());
  }

  std::printf("load: %.3f ms (program %.3f ms, method %.3f ms)\n", program_ms + method_ms, program_ms, method_ms);
  std::printf("first call: %.3f ms\n", first_ms);
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    const size_t n = times.size();
    const double median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
    std::printf("median of %zu calls: %.3f ms (min %.3f, max %.3f)\n", n, median, times.front(), times.back());
  }
  return kExitOk;
}

}  // namespace kiln::tools
