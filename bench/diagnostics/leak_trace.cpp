// Which code keeps host memory across load/unload cycles of a Kiln program?
// Runs warm-up cycles, then N cycles with bench/diagnostics/alloc_stacks.cpp (preloaded by
// bench/diagnostics/leak_trace.sh) recording the stack of every allocation, and records the
// executable mappings while each model library is loaded, so frames inside an
// unloaded library still resolve. bench/diagnostics/leak_trace_report.py reads both files.
//   bench/diagnostics/leak_trace.sh PROGRAM.kiln [cycles=50] [load-only]
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/module.h"

namespace {

// Appends the executable mappings to `out` (opened before tracing, so writing
// allocates nothing that outlives the call; duplicates are fine).
void record_mappings(std::ofstream* out) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(" r-xp ") != std::string::npos) *out << line << '\n';
  out->flush();
}

bool cycle(const std::string& path, bool load_only, std::ofstream* mappings) {
  kiln::Module module(path);
  if (module.load_method("forward") != kiln::Error::Ok) {
    std::fprintf(stderr, "leak_trace: %s\n", kiln::last_error_message().c_str());
    return false;
  }
  if (!load_only) {
    auto meta = module.method_meta("forward");
    if (!meta.ok()) return false;
    std::vector<std::vector<float>> buffers;
    std::vector<kiln::Tensor> inputs;
    for (const kiln::TensorSpec& spec : meta->inputs) {
      std::vector<int64_t> sizes;
      for (const kiln::DimSpec& d : spec.dims) sizes.push_back(d.size);
      int64_t n = 1;
      for (int64_t s : sizes) n *= s;
      if (spec.dtype != kiln::DType::Float32) {
        std::fprintf(stderr, "leak_trace: input '%s' is not float32; use load-only\n", spec.name.c_str());
        return false;
      }
      buffers.emplace_back(static_cast<size_t>(n), 0.5f);
      std::vector<int64_t> strides(sizes.size(), 1);
      for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * sizes[i];
      auto t = kiln::Tensor::from_blob(buffers.back().data(), sizes, strides, kiln::DType::Float32);
      if (!t.ok()) return false;
      inputs.push_back(*t);
    }
    if (!module.forward(inputs).ok()) {
      std::fprintf(stderr, "leak_trace: %s\n", kiln::last_error_message().c_str());
      return false;
    }
  }
  record_mappings(mappings);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: %s PROGRAM.kiln [cycles] [load-only]\n", argv[0]), 2;
  const std::string path = argv[1];
  const int cycles = argc > 2 ? std::atoi(argv[2]) : 50;
  const bool load_only = argc > 3 && std::string(argv[3]) == "load-only";
  const char* maps_out = std::getenv("KILN_LEAK_MAPS");
  std::ofstream mappings(maps_out ? maps_out : "/dev/null");
  for (int i = 0; i < 5; ++i)
    if (!cycle(path, load_only, &mappings)) return 1;
  // The tracer's entry points, found at run time so this runs without it too.
  using StartFn = void (*)();
  using DumpFn = int (*)(const char*);
  auto start = reinterpret_cast<StartFn>(dlsym(RTLD_DEFAULT, "kiln_alloc_stacks_start"));
  auto dump = reinterpret_cast<DumpFn>(dlsym(RTLD_DEFAULT, "kiln_alloc_stacks_dump"));
  const char* stacks_out = std::getenv("KILN_LEAK_STACKS");
  if (!start || !dump || !stacks_out)
    return std::fprintf(stderr, "leak_trace: run through bench/diagnostics/leak_trace.sh (needs the preloaded tracer)\n"), 2;
  start();
  for (int i = 0; i < cycles; ++i)
    if (!cycle(path, load_only, &mappings)) return 1;
  if (int rc = dump(stacks_out); rc != 0) return std::fprintf(stderr, "leak_trace: dump failed (%d)\n", rc), 1;
  std::printf("%d cycles traced\n", cycles);
  return 0;
}
