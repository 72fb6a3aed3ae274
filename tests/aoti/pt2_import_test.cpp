// The .pt2 importer on synthetic packages laid out as torch 2.11 writes them,
// with the fake model library standing in for the AOTInductor one: direct
// loading through Module, refusals, and CUDA kernel files becoming a kernel
// directory. Real packages: tests/python/test_pt2_import.py.
#include "aoti/pt2_import.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../program/zip_builder.h"
#include "aoti/kernel_directory.h"
#include "common/temp_dir.h"
#include "kiln/module.h"
#include "kiln/pt2_import.h"

namespace kiln::aoti {
namespace {

using testing_util::make_zip;
using testing_util::TestEntry;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The fake model: one float32 input of any length, one output, a 4-byte
// float "weights" blob scaling the input.
const std::string kWrapper =
    "    inputs_info_[0].name = \"arg0_1\";\n"
    "    outputs_info_[0].name = \"output0\";\n"
    "AOTI_NOINLINE static void check_input_0(AtenTensorHandle* input_handles) {\n"
    "    int32_t arg0_1_expected_dtype = aoti_torch_dtype_float32();\n"
    "    if (arg0_1_size[0] < 1) {\n"
    "        ss << \"input_handles[0]: dim value is too small at 0, \"\n"
    "           << \"expected it to be >= 1, \" << \"but got: \"\n"
    "        throw std::runtime_error(ss.str());\n"
    "    }\n"
    "    if (1 != arg0_1_stride[0]) {\n"
    "        ss << \"input_handles[0]: unmatched stride value at 0, \"\n"
    "        throw std::runtime_error(ss.str());\n"
    "    }\n"
    "}\n"
    "static bool _check_aoti_runtime_check_inputs_env() {}\n";

std::string weights(float scale) {
  std::string bytes(sizeof(float), '\0');
  std::memcpy(bytes.data(), &scale, sizeof(float));
  return bytes;
}

std::vector<TestEntry> package_entries(const std::string& device, float scale) {
  const std::string dir = "m/data/aotinductor/model/";
  return {
      {dir + "abc.wrapper.cpp", kWrapper},
      {dir + "abc.wrapper_metadata.json",
       "{\"AOTI_DEVICE_KEY\": \"" + device + "\", \"AOTI_PLATFORM\": \"linux\", \"AOTI_CPU_ISA\": \"\", "
       "\"AOTI_COMPUTE_CAPABILITY\": \"\"}"},
      {dir + "abc.wrapper_weights.blob", weights(scale)},
      {dir + "abc.wrapper.so", read_text(KILN_FAKE_MODEL_PATH)},
      {"m/archive_format", "pt2"},
      {"m/archive_version", "0"},
  };
}

std::string write_package(const testing_util::TempDir& dir, const std::vector<TestEntry>& entries,
                          const std::string& name) {
  const std::string path = dir.file(name);
  const auto bytes = make_zip(entries);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                             static_cast<std::streamsize>(bytes.size()));
  return path;
}

Result<std::shared_ptr<const ProgramFile>> import_bytes(const std::vector<TestEntry>& entries,
                                                        const Pt2ImportOptions& options = {}) {
  KILN_ASSIGN_OR_RETURN(ZipArchive package, ZipArchive::from_bytes(make_zip(entries), "test.pt2"));
  ProgramWriter writer;
  KILN_RETURN_IF_ERROR(import_pt2(package, options, &writer));
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, writer.to_bytes());
  return ProgramFile::from_bytes(bytes);
}

TEST(Pt2Import, ModuleLoadsAPackageDirectly) {
  const testing_util::TempDir dir;
  const std::string path = write_package(dir, package_entries("cpu", 2.5f), "direct.pt2");
  Module module(path);
  ASSERT_EQ(module.load(), Error::Ok) << last_error_message();
  auto meta = module.method_meta("forward");
  ASSERT_TRUE(meta.ok()) << last_error_message();
  EXPECT_EQ(meta->device, "cpu");
  EXPECT_EQ(meta->metadata.at("imported_from"), "pt2");
  ASSERT_EQ(meta->inputs.size(), 1u);
  ASSERT_EQ(meta->inputs[0].dims.size(), 1u);
  EXPECT_TRUE(meta->inputs[0].dims[0].dynamic);
  EXPECT_EQ(meta->inputs[0].dims[0].min, 1);

  std::vector<float> x = {1, -2, 4};
  auto input = Tensor::from_blob(x.data(), std::vector<int64_t>{3}, std::vector<int64_t>{1}, DType::Float32);
  ASSERT_TRUE(input.ok());
  auto out = module.forward({*input});
  ASSERT_TRUE(out.ok()) << last_error_message();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ((*out)[0].data<float>()[i], 2.5f * x[i]);

  // The contract from the wrapper is enforced before the library runs.
  std::vector<double> wrong = {1.0};
  auto bad = Tensor::from_blob(wrong.data(), std::vector<int64_t>{1}, std::vector<int64_t>{1}, DType::Float64);
  ASSERT_TRUE(bad.ok());
  auto refused = module.forward({*bad});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(last_error_message().find("must be float32"), std::string::npos) << last_error_message();
}

TEST(Pt2Import, ImportWritesAProgramFile) {
  const testing_util::TempDir dir;
  const std::string path = write_package(dir, package_entries("cpu", 1.0f), "written.pt2");
  const std::string out = dir.file("written.kiln");
  ASSERT_EQ(import_pt2_package(path, out, "", "predict"), Error::Ok) << last_error_message();
  auto program = ProgramFile::open(out);
  ASSERT_TRUE(program.ok()) << last_error_message();
  const MethodInfo* method = (*program)->find_method("predict");
  ASSERT_NE(method, nullptr);
  EXPECT_EQ(method->weights_key, "predict.weights");
  EXPECT_EQ(method->metadata.at("pt2_model"), "model");
  auto library = (*program)->read_named_data(method->library_key);
  ASSERT_TRUE(library.ok());
  EXPECT_EQ(library->size(), read_text(KILN_FAKE_MODEL_PATH).size());
}

TEST(Pt2Import, CudaKernelFilesBecomeAKernelDirectory) {
  auto entries = package_entries("cuda", 1.0f);
  entries.push_back({"m/data/aotinductor/model/triton_poi_0.cubin", "cubin bytes"});
  entries.push_back({"m/data/aotinductor/model/triton_red_1.cubin", "other kernel"});
  auto program = import_bytes(entries);
  ASSERT_TRUE(program.ok()) << last_error_message();
  const MethodInfo& method = (*program)->methods()[0];
  EXPECT_EQ(method.device, "cuda");
  EXPECT_EQ(method.metadata.at(kKernelFilesKey), "forward.kernels/triton_poi_0.cubin,forward.kernels/triton_red_1.cubin");

  std::string dir_path;
  {
    auto dir = KernelDirectory::create(**program, method);
    ASSERT_TRUE(dir.ok()) << last_error_message();
    ASSERT_NE(*dir, nullptr);
    dir_path = (*dir)->path();
    EXPECT_EQ(read_text(dir_path + "/triton_poi_0.cubin"), "cubin bytes");
    EXPECT_EQ(read_text(dir_path + "/triton_red_1.cubin"), "other kernel");
  }
  EXPECT_FALSE(std::filesystem::exists(dir_path)) << "the kernel directory outlived its owner";
}

TEST(Pt2Import, MethodsWithoutKernelFilesGetNoDirectory) {
  auto program = import_bytes(package_entries("cpu", 1.0f));
  ASSERT_TRUE(program.ok()) << last_error_message();
  auto dir = KernelDirectory::create(**program, (*program)->methods()[0]);
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(*dir, nullptr);
}

struct Refusal {
  const char* what;
  std::vector<TestEntry> entries;
  Error error;
  const char* message;
};

TEST(Pt2Import, RefusalsNameTheProblem) {
  const std::string dir = "m/data/aotinductor/model/";
  auto without = [&](const std::string& suffix) {
    auto e = package_entries("cpu", 1.0f);
    std::erase_if(e, [&](const TestEntry& t) { return t.name.ends_with(suffix); });
    return e;
  };
  auto with = [&](TestEntry extra) {
    auto e = package_entries("cpu", 1.0f);
    e.push_back(std::move(extra));
    return e;
  };
  auto device = [&](const std::string& d) { return package_entries(d, 1.0f); };
  auto replaced = [&](const std::string& suffix, const std::string& data) {
    auto e = package_entries("cpu", 1.0f);
    for (TestEntry& t : e)
      if (t.name.ends_with(suffix)) t.data = data;
    return e;
  };
  const Refusal cases[] = {
      {"no archive_format", without("archive_format"), Error::InvalidProgram, "not a PyTorch .pt2 package"},
      {"no library", without(".wrapper.so"), Error::NotSupported, "package_cpp_only"},
      {"no wrapper source", without(".wrapper.cpp"), Error::InvalidProgram, "has no *.wrapper.cpp"},
      {"no metadata", without("metadata.json"), Error::InvalidProgram, "AOTI_DEVICE_KEY"},
      {"cubin on cpu", with({dir + "k.cubin", "x"}), Error::NotSupported, "loads for cuda models only"},
      {"other device", device("mps"), Error::NotSupported, "compiled for device 'mps'"},
      {"two libraries", with({dir + "zzz.wrapper.so", "x"}), Error::InvalidProgram, "has two *.wrapper.so"},
      {"bad library", replaced(".wrapper.so", "not an elf"), Error::InvalidProgram, "not a valid ELF64"},
  };
  for (const Refusal& c : cases) {
    auto program = import_bytes(c.entries);
    ASSERT_FALSE(program.ok()) << c.what;
    EXPECT_EQ(program.error(), c.error) << c.what << ": " << last_error_message();
    EXPECT_NE(last_error_message().find(c.message), std::string::npos) << c.what << ": " << last_error_message();
  }
}

TEST(Pt2Import, PickledWeightsAreRefusedWithHowToReexport) {
  auto entries = package_entries("cpu", 1.0f);
  std::erase_if(entries, [](const TestEntry& t) { return t.name.ends_with("weights.blob"); });
  entries.push_back({"m/data/weights/weight_0", "pickle"});
  auto program = import_bytes(entries);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.error(), Error::NotSupported);
  EXPECT_NE(last_error_message().find("pickle_weights"), std::string::npos) << last_error_message();
  EXPECT_NE(last_error_message().find("binary_blob"), std::string::npos) << last_error_message();
}

TEST(Pt2Import, ModelSelection) {
  auto entries = package_entries("cpu", 1.0f);
  for (const auto& e : package_entries("cpu", 2.0f))
    if (e.name.find("/model/") != std::string::npos) {
      TestEntry copy = e;
      copy.name.replace(copy.name.find("/model/"), 7, "/second/");
      entries.push_back(copy);
    }
  auto ambiguous = import_bytes(entries);
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(last_error_message().find("holds 2 models (model, second)"), std::string::npos) << last_error_message();
  Pt2ImportOptions options;
  options.model_name = "second";
  auto chosen = import_bytes(entries, options);
  ASSERT_TRUE(chosen.ok()) << last_error_message();
  EXPECT_EQ((*chosen)->methods()[0].metadata.at("pt2_model"), "second");
  options.model_name = "third";
  auto missing = import_bytes(entries, options);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), Error::NotFound);
}

TEST(Pt2Import, DataFilesAreRejectedForPackages) {
  const testing_util::TempDir dir;
  const std::string path = write_package(dir, package_entries("cpu", 1.0f), "data.pt2");
  Module module(path, {"weights.kiln.data"});
  EXPECT_EQ(module.load(), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("takes no external data files"), std::string::npos) << last_error_message();
}

}  // namespace
}  // namespace kiln::aoti
