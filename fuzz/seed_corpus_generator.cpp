// Writes the fuzzers' seed corpora: valid program files made with
// ProgramWriter (so the seeds follow the writer whenever the format changes)
// and valid input-validation cases in fuzz/validation_case.h's encoding.
//
//   fuzz_seed_corpus <program corpus dir> <validation corpus dir> <ELF shared library>
//   (the directories are created if needed)
//
// The ELF library becomes the library bytes of the seed methods, so the
// reader fuzzer starts from a well-formed ELF for read_dynamic_symbols.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kiln/program_file.h"
#include "program/program_writer.h"
#include "runtime/input_validation.h"
#include "validation_case.h"

namespace {

using kiln::DimSpec;
using kiln::DType;
using kiln::Error;
using kiln::MethodInfo;
using kiln::TensorSpec;

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

std::vector<uint8_t> pattern(size_t n, unsigned mul) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(i * mul + 1);
  return out;
}

TensorSpec spec(const std::string& name, DType dtype, std::vector<DimSpec> dims) {
  TensorSpec t;
  t.name = name;
  t.dtype = dtype;
  t.dims = std::move(dims);
  return t;
}

MethodInfo method(const std::string& name, const std::string& device, const std::string& library_key,
                  const std::string& weights_key) {
  MethodInfo m;
  m.name = name;
  m.backend = "aoti";
  m.device = device;
  m.library_key = library_key;
  m.weights_key = weights_key;
  m.inputs = {spec("x", DType::Float32, {DimSpec{4, true, 1, 64, "batch"}, DimSpec{16, false, 0, -1, ""}}),
              spec("ids", DType::Int64, {DimSpec{3, false, 0, -1, ""}})};
  m.outputs = {spec("y", DType::Float32, {DimSpec{4, true, 1, 64, "batch"}, DimSpec{8, false, 0, -1, ""}})};
  m.compile_specs = {{"max_batch", "64"}};
  m.metadata = {{"torch_version", "2.11.0"}, {"cpu_isa", "AVX2"}, {"glibc_required", "2.17"}, {"AOTI_MACHINE", "x86_64"}};
  if (device == "cuda") m.metadata["cuda_archs"] = "sm_80,90a,100f+PTX";
  return m;
}

// Removes the named files when it goes out of scope, on every return path.
struct RemovedOnExit {
  std::vector<std::string> paths;
  ~RemovedOnExit() {
    for (const auto& path : paths) std::remove(path.c_str());
  }
};

bool check(Error err, const char* what) {
  if (err == Error::Ok) return true;
  std::fprintf(stderr, "fuzz_seed_corpus: %s: %s\n", what, kiln::last_error_message().c_str());
  return false;
}

// Program seeds: in-file data only, external data (the program and its data
// file concatenated, as the reader fuzzer expects), and a near-empty program.
bool write_program_seeds(const std::string& dir, const std::vector<uint8_t>& elf) {
  {
    kiln::ProgramWriter w;
    if (!check(w.add_named_data("lib", elf), "lib") || !check(w.add_named_data("w", pattern(256, 7)), "w") ||
        !check(w.add_method(method("forward", "cpu", "lib", "w")), "forward") ||
        !check(w.add_method(method("encode", "cuda", "lib", "")), "encode"))
      return false;
    w.set_metadata("model", "seed");
    auto bytes = w.to_bytes();
    if (!bytes.ok() || !check(kiln::ProgramFile::from_bytes(bytes.value()).error(), "in_file.kiln") ||
        !write_file(dir + "/in_file.kiln", bytes.value()))
      return false;
  }
  {
    kiln::ProgramWriter w;
    if (!check(w.add_named_data("lib", elf), "lib") ||
        !check(w.add_named_data("w", pattern(512, 13), 64, /*external=*/true), "w") ||
        !check(w.add_named_data("w2", pattern(100, 5), 64, /*external=*/true), "w2") ||
        !check(w.add_method(method("forward", "cpu", "lib", "w")), "forward"))
      return false;
    // Written as two files, then joined into one seed; neither file stays in
    // the corpus directory, whatever fails.
    const std::string program = dir + "/external.tmp", data = dir + "/external.tmp.data";
    const RemovedOnExit written{{program, data}};
    if (!check(w.write(program, data), "write") ||
        !check(kiln::ProgramFile::open(program, {data}).error(), "external.kiln"))
      return false;
    std::vector<uint8_t> joined = read_file(program);
    const std::vector<uint8_t> data_bytes = read_file(data);
    joined.insert(joined.end(), data_bytes.begin(), data_bytes.end());
    if (!write_file(dir + "/external.kiln", joined)) return false;
  }
  {
    kiln::ProgramWriter w;
    w.set_metadata("empty", "");
    auto bytes = w.to_bytes();
    if (!bytes.ok() || !write_file(dir + "/no_methods.kiln", bytes.value())) return false;
  }
  return true;
}

bool write_validation_seeds(const std::string& dir) {
  using kiln::fuzz::SeedSpec;
  using kiln::fuzz::TensorCase;
  const auto f32 = static_cast<int32_t>(DType::Float32);
  const auto i64 = static_cast<int32_t>(DType::Int64);
  // kKnownDTypes indices: 4 = Int64, 6 = Float32.
  const std::vector<SeedSpec> contract = {
      SeedSpec{6, {DimSpec{4, true, 0, 64, ""}, DimSpec{16, false, 0, -1, ""}}},
      SeedSpec{4, {DimSpec{3, false, 0, -1, ""}}}};
  struct Seed {
    const char* name;
    uint8_t device;  // index into kMethodDevices: 0 = cpu, 1 = cuda
    std::vector<TensorCase> tensors;
  };
  const std::vector<Seed> seeds = {
      {"contiguous", 0, {{true, f32, 0, 0, {7, 16}, {16, 1}, 0, 7 * 16 * 4}, {true, i64, 0, 0, {3}, {1}, 0, 24}}},
      {"strided_offset", 0, {{true, f32, 0, 0, {2, 16}, {1, 2}, 3, 4096}, {true, i64, 0, 0, {3}, {2}, 1, 64}}},
      {"empty_batch_on_cuda", 1, {{true, f32, 1, 0, {0, 16}, {16, 1}, 0, 0}, {true, i64, 0, 0, {3}, {1}, 0, 24}}},
      {"expanded", 0, {{true, f32, 0, 0, {64, 16}, {0, 0}, 0, 4}, {true, i64, 0, 0, {3}, {0}, 0, 8}}},
  };
  static char fake_memory;
  for (const Seed& s : seeds) {
    const std::vector<uint8_t> bytes = kiln::fuzz::encode_validation_case(s.device, contract, s.tensors);
    // Seeds are valid calls: they must round-trip and pass validation.
    const kiln::fuzz::ValidationCase c = kiln::fuzz::decode_validation_case(bytes);
    std::vector<kiln::Tensor> inputs;
    for (const TensorCase& t : c.tensors) inputs.push_back(kiln::fuzz::make_tensor(t, &fake_memory));
    if (!check(kiln::validate_inputs(c.method, inputs), s.name) || !write_file(dir + "/" + s.name, bytes))
      return false;
  }
  // Layouts: a channels_last input given channels_last (passed as it is) and
  // row-major (copied), and a row-major one given transposed.
  const std::vector<SeedSpec> layouts = {
      SeedSpec{6,
               {DimSpec{2, true, 1, 8, ""}, DimSpec{3, false, 0, -1, ""}, DimSpec{4, false, 0, -1, ""},
                DimSpec{5, false, 0, -1, ""}},
               {0, 2, 3, 1}},
      SeedSpec{6, {DimSpec{6, false, 0, -1, ""}, DimSpec{8, false, 0, -1, ""}}}};
  const std::vector<Seed> layout_seeds = {
      {"channels_last",
       0,
       {{true, f32, 0, 0, {2, 3, 4, 5}, {60, 1, 15, 3}, 0, 480}, {true, f32, 0, 0, {6, 8}, {8, 1}, 0, 192}}},
      {"relaid_out",
       0,
       {{true, f32, 0, 0, {2, 3, 4, 5}, {60, 20, 5, 1}, 0, 480}, {true, f32, 0, 0, {6, 8}, {1, 6}, 0, 192}}},
  };
  for (const Seed& s : layout_seeds) {
    const std::vector<uint8_t> bytes = kiln::fuzz::encode_validation_case(s.device, layouts, s.tensors);
    const kiln::fuzz::ValidationCase c = kiln::fuzz::decode_validation_case(bytes);
    if (c.method.inputs[0].dim_order != layouts[0].dim_order) {
      std::fprintf(stderr, "seed %s: the dim order does not round-trip\n", s.name);
      return false;
    }
    std::vector<kiln::Tensor> inputs;
    for (const TensorCase& t : c.tensors) inputs.push_back(kiln::fuzz::make_tensor(t, &fake_memory));
    if (!check(kiln::validate_inputs(c.method, inputs), s.name) || !write_file(dir + "/" + s.name, bytes))
      return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <program corpus dir> <validation corpus dir> <ELF shared library>\n", argv[0]);
    return 2;
  }
  std::error_code ec;
  for (const char* dir : {argv[1], argv[2]})
    if (std::filesystem::create_directories(dir, ec); ec) {
      std::fprintf(stderr, "fuzz_seed_corpus: cannot create %s: %s\n", dir, ec.message().c_str());
      return 1;
    }
  const std::vector<uint8_t> elf = read_file(argv[3]);
  if (elf.empty()) {
    std::fprintf(stderr, "fuzz_seed_corpus: cannot read %s\n", argv[3]);
    return 1;
  }
  if (!write_program_seeds(argv[1], elf) || !write_validation_seeds(argv[2])) {
    std::fprintf(stderr, "fuzz_seed_corpus: failed to write the corpus\n");
    return 1;
  }
  return 0;
}
