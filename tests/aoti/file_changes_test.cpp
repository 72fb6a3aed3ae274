// A program file (or its external data file) that changes under a loaded
// Module: rewritten in place, truncated, or grown. What was checked when the
// program was loaded is what runs (a signature policy's verified copies are
// used, never bytes read later), a later read of changed bytes is refused by
// their digest, and a truncated file is a named error, never a SIGBUS. The
// process and its other Modules keep working throughout.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "aoti/fake_program.h"
#include "common/temp_dir.h"
#include "kiln/module.h"
#include "kiln/signing.h"
#include "program/program_writer.h"

namespace kiln {
namespace {

// Writes `bytes` at `offset` into the existing file, through a descriptor of
// the same inode: what another process editing the file in place does.
void rewrite_in_place(const std::string& path, uint64_t offset, const std::vector<uint8_t>& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
            static_cast<ssize_t>(bytes.size()));
  ASSERT_EQ(::close(fd), 0);
}

void truncate_file(const std::string& path, uint64_t size) {
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(size)), 0) << path;
}

std::vector<uint8_t> padded(std::vector<uint8_t> bytes, size_t size) {
  bytes.resize(size, 0);  // an ELF file may end in bytes nothing refers to
  return bytes;
}

const float kScale = 3.0f;

// A program around the fake model (y = scale * x), its library padded to
// `library_size` bytes so another library padded alike can be written over
// it in place.
struct Program {
  testing_util::TempDir dir{"kiln-file-changes"};
  std::string path;
  KeyPair keys;
};

Program make_program(size_t library_size, bool external_weights, bool sign) {
  Program p;
  p.path = p.dir.file("m.kiln");
  ProgramWriter writer;
  const MethodInfo method = fake_forward_method();
  std::vector<uint8_t> weights(sizeof(float));
  std::memcpy(weights.data(), &kScale, sizeof(float));
  EXPECT_EQ(writer.add_method(method), Error::Ok) << last_error_message();
  EXPECT_EQ(writer.add_named_data("lib", padded(read_file(KILN_FAKE_MODEL_PATH), library_size)), Error::Ok);
  EXPECT_EQ(writer.add_named_data("weights", weights, 64, external_weights), Error::Ok);
  EXPECT_EQ(writer.write(p.path), Error::Ok) << last_error_message();
  if (sign) {
    auto keys = generate_key_pair();
    EXPECT_TRUE(keys.ok());
    p.keys = *keys;
    EXPECT_EQ(sign_program_file(p.path, p.keys.secret_key), Error::Ok) << last_error_message();
  }
  return p;
}

const NamedDataInfo& entry(const Module& module, const std::string& key) {
  for (const NamedDataInfo& info : module.program()->named_data())
    if (info.key == key) return info;
  ADD_FAILURE() << "no entry " << key;
  static const NamedDataInfo none;
  return none;
}

LoadBackendOptionsMap trusting(const Program& p, bool verify_weights = true) {
  BackendOptions program;
  program.set("require_signature", true);
  program.set("trusted_keys", format_public_key(p.keys.public_key));
  LoadBackendOptionsMap options;
  options.set_options(kProgramOptions, program);
  if (!verify_weights) {
    BackendOptions aoti;
    aoti.set("verify_weights", false);
    options.set_options("aoti", aoti);
  }
  return options;
}

// forward([1, 2, 3]) or the error, as text, so a failure shows which.
std::string run(Module& module) {
  std::vector<float> x = {1, 2, 3};
  auto out = module.forward({vector_tensor(x)});
  if (!out.ok()) return std::string(to_string(out.error())) + ": " + last_error_message();
  const float* y = (*out)[0].data<float>();
  return std::to_string(static_cast<int>(y[0])) + "," + std::to_string(static_cast<int>(y[1])) + "," +
         std::to_string(static_cast<int>(y[2]));
}

size_t common_library_size() {
  return std::max(read_file(KILN_FAKE_MODEL_PATH).size(), read_file(KILN_FAKE_MODEL_NEGATE_PATH).size());
}

TEST(FileChanges, LibraryRewrittenInPlaceAfterASignedLoadIsNeverTheOneThatRuns) {
  const size_t size = common_library_size();
  Program p = make_program(size, /*external_weights=*/false, /*sign=*/true);
  Module module(p.path);
  ASSERT_EQ(module.load(trusting(p)), Error::Ok) << last_error_message();
  // A loadable library that computes -scale * x, written over the signed one.
  rewrite_in_place(p.path, entry(module, "lib").file_offset, padded(read_file(KILN_FAKE_MODEL_NEGATE_PATH), size));
  // The method loads the copy the policy verified at load().
  EXPECT_EQ(run(module), "3,6,9");
  // Loading it again reads the file again: the rewritten bytes fail the
  // signed digest, so they are never dlopen'ed.
  ASSERT_EQ(module.unload_method("forward"), Error::Ok);
  EXPECT_EQ(module.load_method("forward"), Error::IntegrityError);
  EXPECT_NE(last_error_message().find("SHA-256 of named data 'lib'"), std::string::npos) << last_error_message();
}

TEST(FileChanges, WeightsRewrittenInPlaceAfterASignedLoadDoNotChangeTheOutputs) {
  for (bool external : {false, true}) {
    SCOPED_TRACE(external ? "external data file" : "in the program");
    Program p = make_program(common_library_size(), external, /*sign=*/true);
    Module module(p.path);
    // Even with aoti.verify_weights off: a signature policy checks every read.
    ASSERT_EQ(module.load(trusting(p, /*verify_weights=*/false)), Error::Ok) << last_error_message();
    const NamedDataInfo& weights = entry(module, "weights");
    const float evil = -100.0f;
    std::vector<uint8_t> bytes(sizeof(float));
    std::memcpy(bytes.data(), &evil, sizeof(float));
    rewrite_in_place(external ? p.path + ".data" : p.path, weights.file_offset, bytes);
    EXPECT_EQ(run(module), "3,6,9");
    ASSERT_EQ(module.unload_method("forward"), Error::Ok);
    EXPECT_EQ(module.load_method("forward"), Error::IntegrityError);
    EXPECT_NE(last_error_message().find("SHA-256 of named data 'weights'"), std::string::npos) << last_error_message();
  }
}

TEST(FileChanges, UnsignedProgramRewrittenBetweenLoadAndLoadMethodIsCaughtByItsDigests) {
  const size_t size = common_library_size();
  Program p = make_program(size, /*external_weights=*/false, /*sign=*/false);
  Module module(p.path);
  ASSERT_EQ(module.load(), Error::Ok) << last_error_message();
  rewrite_in_place(p.path, entry(module, "lib").file_offset, padded(read_file(KILN_FAKE_MODEL_NEGATE_PATH), size));
  EXPECT_EQ(module.load_method("forward"), Error::IntegrityError);
  EXPECT_NE(last_error_message().find("SHA-256 of named data 'lib'"), std::string::npos) << last_error_message();
}

TEST(FileChanges, TruncatedBetweenLoadAndLoadMethodIsANamedErrorAndOtherModulesKeepWorking) {
  for (bool external : {false, true}) {
    SCOPED_TRACE(external ? "external data file" : "in the program");
    Program p = make_program(common_library_size(), external, /*sign=*/false);
    Program other = make_program(common_library_size(), external, /*sign=*/false);
    Module served(other.path);
    ASSERT_EQ(run(served), "3,6,9");
    Module module(p.path);
    ASSERT_EQ(module.load(), Error::Ok) << last_error_message();
    // Cut inside the library (in-file weights) or the whole data file away.
    truncate_file(external ? p.path + ".data" : p.path, external ? 0 : entry(module, "lib").file_offset + 100);
    EXPECT_EQ(module.load_method("forward"), Error::IoError);
    EXPECT_NE(last_error_message().find("truncated after it was opened"), std::string::npos) << last_error_message();
    EXPECT_EQ(run(served), "3,6,9");
  }
}

TEST(FileChanges, TruncatedWhileServedKeepsServing) {
  Program p = make_program(common_library_size(), /*external_weights=*/false, /*sign=*/false);
  Module module(p.path);
  ASSERT_EQ(run(module), "3,6,9");
  truncate_file(p.path, 0);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(run(module), "3,6,9");
  // Grown with garbage: nothing read after open() sees it either.
  rewrite_in_place(p.path, 0, std::vector<uint8_t>(8192, 0xEE));
  EXPECT_EQ(run(module), "3,6,9");
}

TEST(FileChanges, AReSavedProgramIsANewFileAndTheLoadedModuleKeepsTheOldOne) {
  Program p = make_program(common_library_size(), /*external_weights=*/false, /*sign=*/false);
  Module module(p.path);
  ASSERT_EQ(module.load(), Error::Ok) << last_error_message();
  // Re-saved under the same name with other weights, through the writer
  // (temporary file + rename): the loaded Module still reads its own file.
  ProgramWriter writer;
  MethodInfo method = *module.program()->find_method("forward");
  std::vector<uint8_t> weights(sizeof(float));
  const float other_scale = 5.0f;
  std::memcpy(weights.data(), &other_scale, sizeof(float));
  ASSERT_EQ(writer.add_method(method), Error::Ok);
  ASSERT_EQ(writer.add_named_data("lib", padded(read_file(KILN_FAKE_MODEL_PATH), common_library_size())), Error::Ok);
  ASSERT_EQ(writer.add_named_data("weights", weights), Error::Ok);
  ASSERT_EQ(writer.write(p.path), Error::Ok) << last_error_message();
  EXPECT_EQ(run(module), "3,6,9");
  Module fresh(p.path);
  EXPECT_EQ(run(fresh), "5,10,15");
}

// The unchecked range reads a device upload uses when verify_weights is off:
// the file's current bytes, an IoError once it is truncated, and refused
// outright after a signature policy made digests required.
TEST(FileChanges, UncheckedRangeReadsSeeTheFileAndStopOnceDigestsAreRequired) {
  Program p = make_program(common_library_size(), /*external_weights=*/true, /*sign=*/false);
  auto program = ProgramFile::open(p.path);
  ASSERT_TRUE(program.ok()) << last_error_message();
  std::vector<uint8_t> got(sizeof(float));
  ASSERT_EQ((*program)->read_named_range("weights", 0, got), Error::Ok) << last_error_message();
  float scale = 0;
  std::memcpy(&scale, got.data(), sizeof(float));
  EXPECT_EQ(scale, kScale);
  EXPECT_EQ((*program)->read_named_range("weights", 2, got), Error::InvalidArgument);
  truncate_file(p.path + ".data", 0);
  EXPECT_EQ((*program)->read_named_range("weights", 0, got), Error::IoError);
  EXPECT_NE(last_error_message().find("truncated after it was opened"), std::string::npos) << last_error_message();
  (*program)->require_digests();
  EXPECT_EQ((*program)->read_named_range("weights", 0, got), Error::IntegrityError);
}

}  // namespace
}  // namespace kiln
