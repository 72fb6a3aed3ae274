// ProgramWriter -> ProgramFile round trips, and the cross-language golden
// files: python_written.kiln (written by python/kiln/program.py, read here)
// and cpp_written.kiln (written here, read by tests/python/test_program.py).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "kiln/program_file.h"
#include "program/program_writer.h"
#include "program/sha256.h"
#include "test_util.h"

namespace kiln {
namespace {

using testing_util::pattern;
using testing_util::read_file;
using testing_util::TempDir;

const std::string kGoldenDir = std::string(KILN_SOURCE_DIR) + "/tests/data/golden/";

DimSpec dim(int64_t size) { return DimSpec{size, false, 0, -1, ""}; }
DimSpec dyn(int64_t size, int64_t min, int64_t max, const std::string& name) { return DimSpec{size, true, min, max, name}; }

// The golden content, the same as tests/data/golden/make_python_golden.py builds.
ProgramWriter golden_writer(const std::string& writer_name) {
  ProgramWriter w;
  w.set_metadata("model", "golden");
  w.set_metadata("writer", writer_name);
  EXPECT_EQ(w.add_named_data("forward.so", pattern(300, 7, 1)), Error::Ok);
  EXPECT_EQ(w.add_named_data("forward.weights", pattern(1000, 13, 5), 64, /*external=*/true), Error::Ok);
  EXPECT_EQ(w.add_named_data("encode.so", pattern(64, 3, 9)), Error::Ok);
  EXPECT_EQ(w.add_named_data("extra", pattern(10, 1, 0), 16), Error::Ok);
  EXPECT_EQ(w.add_named_data("alias.so", pattern(300, 7, 1)), Error::Ok);
  MethodInfo forward;
  forward.name = "forward";
  forward.backend = "aoti";
  forward.device = "cpu";
  forward.inputs = {TensorSpec{"x", DType::Float32, {dyn(2, 1, 16, "batch"), dim(8)}},
                    TensorSpec{"y", DType::Int64, {dim(3)}}};
  forward.outputs = {TensorSpec{"out", DType::BFloat16, {dyn(2, 1, 16, "batch"), dim(8)}}};
  forward.compile_specs = {{"num_threads", "1"}};
  forward.metadata = {{"cpu_isa", "avx2"}, {"torch_version", "2.11.0"}};
  forward.library_key = "forward.so";
  forward.weights_key = "forward.weights";
  EXPECT_EQ(w.add_method(forward), Error::Ok);
  MethodInfo encode;
  encode.name = "encode";
  encode.backend = "aoti";
  encode.device = "cuda";
  encode.inputs = {TensorSpec{"tokens", DType::Int32, {dyn(5, 1, -1, "s0")}}};
  encode.outputs = {TensorSpec{"h", DType::Float16, {dyn(5, 1, -1, "s0"), dim(4)}}};
  encode.library_key = "encode.so";
  EXPECT_EQ(w.add_method(encode), Error::Ok);
  return w;
}

void expect_dim(const DimSpec& d, int64_t size, bool dynamic, int64_t min, int64_t max, const std::string& name) {
  EXPECT_EQ(d.size, size);
  EXPECT_EQ(d.dynamic, dynamic);
  if (dynamic) {
    EXPECT_EQ(d.min, min);
    EXPECT_EQ(d.max, max);
  }
  EXPECT_EQ(d.name, name);
}

void expect_entry(const ProgramFile& p, size_t index, const std::string& key, const std::vector<uint8_t>& bytes,
                  uint64_t alignment, int32_t external_file) {
  ASSERT_LT(index, p.named_data().size());
  const NamedDataInfo& info = p.named_data()[index];
  EXPECT_EQ(info.key, key);
  EXPECT_EQ(info.size, bytes.size());
  EXPECT_EQ(info.alignment, alignment);
  EXPECT_EQ(info.external_file, external_file);
  EXPECT_EQ(info.sha256, sha256(bytes)) << key;
  auto got = p.read_named_data(key);
  ASSERT_TRUE(got.ok()) << last_error_message();
  EXPECT_EQ(std::vector<uint8_t>(got->begin(), got->end()), bytes) << key;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(got->data()) % alignment, 0u) << key << " is not aligned in memory";
}

// Field-by-field check against the literal golden content.
void expect_golden(const ProgramFile& p, const std::string& writer_name, const std::string& data_file) {
  EXPECT_EQ(p.format_version(), kProgramVersion);
  EXPECT_EQ(p.metadata(), (std::map<std::string, std::string>{{"model", "golden"}, {"writer", writer_name}}));
  EXPECT_EQ(p.external_file_names(), std::vector<std::string>{data_file});
  ASSERT_EQ(p.methods().size(), 2u);

  const MethodInfo* f = p.find_method("forward");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f, &p.methods()[0]);
  EXPECT_EQ(f->backend, "aoti");
  EXPECT_EQ(f->device, "cpu");
  ASSERT_EQ(f->inputs.size(), 2u);
  EXPECT_EQ(f->inputs[0].name, "x");
  EXPECT_EQ(f->inputs[0].dtype, DType::Float32);
  ASSERT_EQ(f->inputs[0].dims.size(), 2u);
  expect_dim(f->inputs[0].dims[0], 2, true, 1, 16, "batch");
  expect_dim(f->inputs[0].dims[1], 8, false, 0, -1, "");
  EXPECT_EQ(f->inputs[1].name, "y");
  EXPECT_EQ(f->inputs[1].dtype, DType::Int64);
  ASSERT_EQ(f->inputs[1].dims.size(), 1u);
  expect_dim(f->inputs[1].dims[0], 3, false, 0, -1, "");
  ASSERT_EQ(f->outputs.size(), 1u);
  EXPECT_EQ(f->outputs[0].name, "out");
  EXPECT_EQ(f->outputs[0].dtype, DType::BFloat16);
  ASSERT_EQ(f->outputs[0].dims.size(), 2u);
  expect_dim(f->outputs[0].dims[0], 2, true, 1, 16, "batch");
  EXPECT_EQ(f->compile_specs, (std::map<std::string, std::string>{{"num_threads", "1"}}));
  EXPECT_EQ(f->metadata, (std::map<std::string, std::string>{{"cpu_isa", "avx2"}, {"torch_version", "2.11.0"}}));
  EXPECT_EQ(f->library_key, "forward.so");
  EXPECT_EQ(f->weights_key, "forward.weights");

  const MethodInfo* e = p.find_method("encode");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->device, "cuda");
  ASSERT_EQ(e->inputs.size(), 1u);
  EXPECT_EQ(e->inputs[0].dtype, DType::Int32);
  expect_dim(e->inputs[0].dims[0], 5, true, 1, -1, "s0");
  ASSERT_EQ(e->outputs.size(), 1u);
  EXPECT_EQ(e->outputs[0].dtype, DType::Float16);
  expect_dim(e->outputs[0].dims[1], 4, false, 0, -1, "");
  EXPECT_TRUE(e->compile_specs.empty());
  EXPECT_EQ(e->library_key, "encode.so");
  EXPECT_EQ(e->weights_key, "");
  EXPECT_EQ(p.find_method("missing"), nullptr);

  ASSERT_EQ(p.named_data().size(), 5u);
  expect_entry(p, 0, "forward.so", pattern(300, 7, 1), 64, -1);
  // Weights are raised to a page boundary by both writers.
  expect_entry(p, 1, "forward.weights", pattern(1000, 13, 5), 4096, 0);
  expect_entry(p, 2, "encode.so", pattern(64, 3, 9), 64, -1);
  expect_entry(p, 3, "extra", pattern(10, 1, 0), 16, -1);
  // Python stores identical bytes once (two entries, one segment); C++ twice.
  expect_entry(p, 4, "alias.so", pattern(300, 7, 1), 64, -1);
  auto missing = p.read_named_data("nope");
  EXPECT_EQ(missing.error(), Error::NotFound);
}

TEST(ProgramGolden, PythonWrittenFileReadsFieldByField) {
  auto p = ProgramFile::open(kGoldenDir + "python_written.kiln");
  ASSERT_TRUE(p.ok()) << last_error_message();
  expect_golden(**p, "python", "python_written.kiln.data");
  EXPECT_EQ((*p)->file_size(), read_file(kGoldenDir + "python_written.kiln").size());
}

TEST(ProgramGolden, PythonWrittenFileWithExplicitDataPath) {
  auto p = ProgramFile::open(kGoldenDir + "python_written.kiln", {kGoldenDir + "python_written.kiln.data"});
  ASSERT_TRUE(p.ok()) << last_error_message();
  expect_golden(**p, "python", "python_written.kiln.data");
}

TEST(ProgramGolden, CppWriterReproducesCommittedGolden) {
  const TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const ProgramWriter w = golden_writer("cpp");
  ASSERT_EQ(w.write(dir.file("cpp_written.kiln")), Error::Ok) << last_error_message();
  auto p = ProgramFile::open(dir.file("cpp_written.kiln"));
  ASSERT_TRUE(p.ok()) << last_error_message();
  expect_golden(**p, "cpp", "cpp_written.kiln.data");
  if (std::getenv("KILN_UPDATE_GOLDEN")) {
    ASSERT_EQ(w.write(kGoldenDir + "cpp_written.kiln"), Error::Ok) << last_error_message();
  }
  // The writer is deterministic, so the committed file (read by the Python
  // test) must be exactly what this build writes.
  EXPECT_EQ(read_file(dir.file("cpp_written.kiln")), read_file(kGoldenDir + "cpp_written.kiln"))
      << "rerun with KILN_UPDATE_GOLDEN=1 after an intended format change";
  EXPECT_EQ(read_file(dir.file("cpp_written.kiln.data")), read_file(kGoldenDir + "cpp_written.kiln.data"));
}

TEST(ProgramWriter, InFileRoundTripThroughBytes) {
  ProgramWriter w;
  w.set_metadata("k", "v");
  const auto lib = pattern(777, 5, 3);
  const auto weights = pattern(5000, 11, 2);
  ASSERT_EQ(w.add_named_data("lib", lib), Error::Ok);
  ASSERT_EQ(w.add_named_data("w", weights), Error::Ok);
  MethodInfo m;
  m.name = "forward";
  m.backend = "aoti";
  m.device = "cpu";
  m.inputs = {TensorSpec{"a", DType::UInt8, {dim(0)}}};
  m.library_key = "lib";
  m.weights_key = "w";
  ASSERT_EQ(w.add_method(m), Error::Ok);
  auto bytes = w.to_bytes();
  ASSERT_TRUE(bytes.ok()) << last_error_message();
  auto p = ProgramFile::from_bytes(*bytes);
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_TRUE((*p)->external_file_names().empty());
  EXPECT_EQ((*p)->file_size(), bytes->size());
  expect_entry(**p, 0, "lib", lib, 64, -1);
  expect_entry(**p, 1, "w", weights, 4096, -1);
  ASSERT_EQ((*p)->methods().size(), 1u);
  EXPECT_EQ((*p)->methods()[0].inputs[0].dims[0].size, 0);
  EXPECT_EQ((*p)->metadata().at("k"), "v");
}

TEST(ProgramWriter, RejectsBadInput) {
  ProgramWriter w;
  const auto a = pattern(10, 1, 1);
  EXPECT_EQ(w.add_named_data("", a), Error::InvalidArgument);
  EXPECT_EQ(w.add_named_data("a", a, 48), Error::InvalidArgument);
  EXPECT_EQ(w.add_named_data("a", a, 8192), Error::InvalidArgument);
  EXPECT_EQ(w.add_named_data("a", a), Error::Ok);
  EXPECT_EQ(w.add_named_data("a", a, 128), Error::Ok);  // same bytes: dedup
  EXPECT_EQ(w.add_named_data("a", pattern(10, 1, 2)), Error::InvalidArgument);
  MethodInfo m;
  m.name = "f";
  m.backend = "aoti";
  m.device = "cpu";
  m.library_key = "missing";
  EXPECT_EQ(w.add_method(m), Error::Ok);
  EXPECT_EQ(w.add_method(m), Error::InvalidArgument);  // duplicate name
  EXPECT_EQ(w.to_bytes().error(), Error::InvalidArgument);  // key names no entry
  MethodInfo bad = m;
  bad.name = "g";
  bad.inputs = {TensorSpec{"x", static_cast<DType>(99), {}}};
  EXPECT_EQ(w.add_method(bad), Error::InvalidArgument);
}

TEST(ProgramFile, MissingFileIsNotFound) {
  auto p = ProgramFile::open("/nonexistent/dir/model.kiln");
  EXPECT_EQ(p.error(), Error::NotFound);
  EXPECT_NE(last_error_message().find("/nonexistent/dir/model.kiln"), std::string::npos);
}

TEST(ProgramFile, ConcurrentDigestChecksAgree) {
  ProgramWriter w;
  const auto blob = pattern(1 << 20, 17, 3);
  ASSERT_EQ(w.add_named_data("blob", blob, 4096), Error::Ok);
  auto bytes = w.to_bytes();
  ASSERT_TRUE(bytes.ok());
  auto p = ProgramFile::from_bytes(*bytes);
  ASSERT_TRUE(p.ok()) << last_error_message();
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      auto s = (*p)->read_named_data("blob");
      if (s.ok() && s->size() == blob.size()) ++good;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 8);
}

}  // namespace
}  // namespace kiln
