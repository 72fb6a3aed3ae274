// The load-time signature policy with a real model library (fixtures/fake_model.cpp):
// a trusted signed program loads and runs; an unsigned, untrusted or tampered
// one is refused by Module::load naming what failed, before any library is
// dlopen'ed (counted with dl_iterate_phdr). Policy sources: the "program" load
// options, a trusted-keys file, the runtime's settings and the environment
// (KILN_REQUIRE_SIGNATURE / KILN_TRUSTED_KEYS).
#include <gtest/gtest.h>
#include <link.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "aoti/fake_program.h"
#include "common/temp_dir.h"
#include "kiln/module.h"
#include "kiln/signing.h"
#include "program/program_writer.h"
#include "program/signature.h"

namespace kiln {
namespace {

namespace pf = program_format;

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Shared objects currently loaded in the process.
size_t loaded_objects() {
  size_t n = 0;
  dl_iterate_phdr([](dl_phdr_info*, size_t, void* count) { return ++*static_cast<size_t*>(count), 0; }, &n);
  return n;
}

const float kScale = 3.0f;

struct Fixture {
  testing_util::TempDir dir;
  std::string path;
  KeyPair keys;
  std::vector<uint8_t> library, weights, signed_bytes;
};

// The fake model (y = weights[0] * x) in a program signed with a fresh key.
Fixture make_signed_program(const std::string& name) {
  Fixture f;
  f.dir = testing_util::TempDir(name);
  f.path = f.dir.file("m.kiln");
  f.library = read_file(KILN_FAKE_MODEL_PATH);
  f.weights.resize(sizeof(float));
  std::memcpy(f.weights.data(), &kScale, sizeof(float));
  ProgramWriter writer;
  const MethodInfo method = fake_forward_method();
  EXPECT_EQ(writer.add_method(method), Error::Ok) << last_error_message();
  EXPECT_EQ(writer.add_named_data("lib", f.library), Error::Ok) << last_error_message();
  EXPECT_EQ(writer.add_named_data("weights", f.weights), Error::Ok) << last_error_message();
  EXPECT_EQ(writer.write(f.path), Error::Ok) << last_error_message();
  auto keys = generate_key_pair();
  EXPECT_TRUE(keys.ok()) << last_error_message();
  f.keys = *keys;
  EXPECT_EQ(sign_program_file(f.path, f.keys.secret_key), Error::Ok) << last_error_message();
  f.signed_bytes = read_file(f.path);
  return f;
}

LoadBackendOptionsMap trust(const std::string& public_key_lines) {
  BackendOptions program;
  program.set("require_signature", true);
  program.set("trusted_keys", public_key_lines);
  LoadBackendOptionsMap options;
  options.set_options(kProgramOptions, program);
  return options;
}

size_t offset_of(const std::vector<uint8_t>& haystack, const std::vector<uint8_t>& needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end());
  EXPECT_NE(it, haystack.end());
  return static_cast<size_t>(it - haystack.begin());
}

std::vector<float> run_forward(Module& module) {
  std::vector<float> x = {1, 2, 3};
  auto input = Tensor::from_blob(x.data(), std::vector<int64_t>{3}, std::vector<int64_t>{1}, DType::Float32);
  EXPECT_TRUE(input.ok());
  auto out = module.forward({*input});
  EXPECT_TRUE(out.ok()) << last_error_message();
  if (!out.ok()) return {};
  const float* y = (*out)[0].data<float>();
  return {y, y + 3};
}

// Loads `path` under `options` and expects a refusal containing `expected`,
// with no shared object loaded and no method loadable afterwards.
void expect_refused_before_dlopen(std::shared_ptr<Runtime> runtime, const std::string& path,
                                  const LoadBackendOptionsMap& options, Error code, const std::string& expected) {
  const size_t objects = loaded_objects();
  Module module(std::move(runtime), path);
  EXPECT_EQ(module.load(options), code) << last_error_message();
  const std::string message = last_error_message();
  EXPECT_NE(message.find("refused by the signature policy"), std::string::npos) << message;
  EXPECT_NE(message.find(expected), std::string::npos) << message;
  EXPECT_FALSE(module.is_loaded());
  EXPECT_EQ(loaded_objects(), objects) << "a shared object was loaded for a refused program";
  EXPECT_FALSE(module.is_method_loaded("forward"));
}

void expect_refused_before_dlopen(const std::string& path, const LoadBackendOptionsMap& options, Error code,
                                  const std::string& expected) {
  expect_refused_before_dlopen(Runtime::default_runtime(), path, options, code, expected);
}

TEST(SignedProgram, TrustedSignatureLoadsAndRuns) {
  Fixture f = make_signed_program("signed-ok");
  const size_t objects = loaded_objects();
  Module module(f.path);
  ASSERT_EQ(module.load(trust(format_public_key(f.keys.public_key))), Error::Ok) << last_error_message();
  EXPECT_EQ(run_forward(module), (std::vector<float>{3, 6, 9}));
  EXPECT_GT(loaded_objects(), objects);  // the probe does see the model's dlopen
}

TEST(SignedProgram, UnsignedProgramIsRefused) {
  Fixture f = make_signed_program("signed-unsigned");
  auto bytes = f.signed_bytes;
  bytes.resize(bytes.size() - pf::kSignatureTrailerSize);
  write_file(f.path, bytes);
  expect_refused_before_dlopen(f.path, trust(format_public_key(f.keys.public_key)), Error::IntegrityError,
                               "the program is not signed");
  // Without the policy the same file loads: the requirement is what refused it.
  Module module(f.path);
  ASSERT_EQ(module.load(), Error::Ok) << last_error_message();
  EXPECT_EQ(run_forward(module), (std::vector<float>{3, 6, 9}));
}

TEST(SignedProgram, UntrustedSignerIsRefused) {
  Fixture f = make_signed_program("signed-untrusted");
  auto stranger = generate_key_pair();
  ASSERT_TRUE(stranger.ok());
  expect_refused_before_dlopen(f.path, trust(format_public_key(stranger->public_key)), Error::IntegrityError,
                               "which is not one of the 1 trusted keys");
}

TEST(SignedProgram, FlippedLibraryByteIsRefusedBeforeDlopen) {
  Fixture f = make_signed_program("signed-lib");
  auto bytes = f.signed_bytes;
  bytes[offset_of(bytes, f.library) + f.library.size() / 2] ^= 0x01;
  write_file(f.path, bytes);
  expect_refused_before_dlopen(f.path, trust(format_public_key(f.keys.public_key)), Error::IntegrityError,
                               "SHA-256 of named data 'lib'");
}

TEST(SignedProgram, FlippedWeightsByteIsRefusedBeforeDlopen) {
  Fixture f = make_signed_program("signed-weights");
  auto bytes = f.signed_bytes;
  // Located through the reader: the 4 bytes of kScale also occur in the library.
  auto program = ProgramFile::open(f.path);
  ASSERT_TRUE(program.ok()) << last_error_message();
  const NamedDataInfo* weights = nullptr;
  for (const NamedDataInfo& info : (*program)->named_data())
    if (info.key == "weights") weights = &info;
  ASSERT_NE(weights, nullptr);
  ASSERT_EQ(weights->external_file, -1);
  const auto at = static_cast<size_t>(weights->file_offset);
  ASSERT_EQ(at % pf::kWeightsAlignment, 0u);
  bytes[at] ^= 0x01;
  write_file(f.path, bytes);
  expect_refused_before_dlopen(f.path, trust(format_public_key(f.keys.public_key)), Error::IntegrityError,
                               "SHA-256 of named data 'weights'");
}

TEST(SignedProgram, FlippedSignatureByteIsRefused) {
  Fixture f = make_signed_program("signed-sig");
  auto bytes = f.signed_bytes;
  bytes[bytes.size() - pf::kSignatureTrailerSize + pf::kSigOffSignature + 5] ^= 0x01;
  write_file(f.path, bytes);
  expect_refused_before_dlopen(f.path, trust(format_public_key(f.keys.public_key)), Error::IntegrityError,
                               "does not match the program header");
}

TEST(SignedProgram, FlippedHeaderBytesAreRefused) {
  Fixture f = make_signed_program("signed-header");
  for (size_t offset : {size_t{9}, size_t{20}, size_t{40}, size_t{60}}) {
    auto bytes = f.signed_bytes;
    bytes[offset] ^= 0x01;
    write_file(f.path, bytes);
    const size_t objects = loaded_objects();
    Module module(f.path);
    EXPECT_NE(module.load(trust(format_public_key(f.keys.public_key))), Error::Ok)
        << "header byte " << offset;
    EXPECT_NE(last_error_message().find("program file '" + f.path + "'"), std::string::npos)
        << last_error_message();
    EXPECT_EQ(loaded_objects(), objects);
  }
}

TEST(SignedProgram, WithoutPolicyALibraryDigestIsStillCheckedBeforeDlopen) {
  Fixture f = make_signed_program("signed-lazy");
  auto bytes = f.signed_bytes;
  bytes[offset_of(bytes, f.library) + 64] ^= 0x01;
  write_file(f.path, bytes);
  const size_t objects = loaded_objects();
  Module module(f.path);
  ASSERT_EQ(module.load(), Error::Ok) << last_error_message();  // digests are checked lazily
  EXPECT_EQ(module.load_method("forward"), Error::IntegrityError);
  EXPECT_NE(last_error_message().find("SHA-256 of named data 'lib'"), std::string::npos)
      << last_error_message();
  EXPECT_EQ(loaded_objects(), objects);
}

TEST(SignedProgram, TrustedKeysFileOption) {
  Fixture f = make_signed_program("signed-file");
  auto stranger = generate_key_pair();
  ASSERT_TRUE(stranger.ok());
  const std::string keys_file = f.dir.file("trusted.pub");
  std::ofstream(keys_file) << "# signers\n"
                           << format_public_key(stranger->public_key, "stranger")
                           << format_public_key(f.keys.public_key, "release");
  BackendOptions program;
  program.set("require_signature", true);
  program.set("trusted_keys_file", "/nonexistent-dir-for-kiln/none.pub:" + keys_file);
  LoadBackendOptionsMap options;
  options.set_options(kProgramOptions, program);
  Module missing(f.path);
  EXPECT_EQ(missing.load(options), Error::NotFound);  // an unreadable trust file fails closed
  EXPECT_NE(last_error_message().find("program.trusted_keys_file"), std::string::npos)
      << last_error_message();
  program.set("trusted_keys_file", keys_file);
  options.set_options(kProgramOptions, program);
  Module module(f.path);
  ASSERT_EQ(module.load(options), Error::Ok) << last_error_message();
  EXPECT_EQ(run_forward(module), (std::vector<float>{3, 6, 9}));
}

// Sets environment variables for one test and restores them after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { had_ ? ::setenv(name_, old_.c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(SignedProgram, EnvironmentRequiresAndTrusts) {
  Fixture f = make_signed_program("signed-env");
  const std::string pub = f.dir.file("release.pub");
  std::ofstream(pub) << format_public_key(f.keys.public_key);
  // A runtime reads the environment when it is created.
  ScopedEnv require("KILN_REQUIRE_SIGNATURE", "1");
  {
    Module module(*Runtime::create(), f.path);  // required, but nothing trusted
    EXPECT_EQ(module.load(), Error::InvalidArgument);
    EXPECT_NE(last_error_message().find("no key is trusted"), std::string::npos) << last_error_message();
  }
  ScopedEnv keys("KILN_TRUSTED_KEYS", pub);
  auto runtime = Runtime::create();
  ASSERT_TRUE(runtime.ok()) << last_error_message();
  {
    Module module(*runtime, f.path);  // execute() loads with no options: the environment alone decides
    EXPECT_EQ(run_forward(module), (std::vector<float>{3, 6, 9}));
  }
  // Options cannot switch the environment's requirement off.
  auto bytes = f.signed_bytes;
  bytes.resize(bytes.size() - pf::kSignatureTrailerSize);
  write_file(f.path, bytes);
  BackendOptions off;
  off.set("require_signature", false);
  LoadBackendOptionsMap options;
  options.set_options(kProgramOptions, off);
  expect_refused_before_dlopen(*runtime, f.path, options, Error::IntegrityError, "the program is not signed");
  // Nor can code.
  EXPECT_EQ((*runtime)->set("require_signature", false), Error::InvalidState);
}

TEST(SignedProgram, ARuntimeSettingRequiresForEveryModuleOfIt) {
  Fixture f = make_signed_program("signed-setting");
  auto strict = Runtime::create({{"require_signature", true}});
  ASSERT_TRUE(strict.ok()) << last_error_message();
  auto bytes = f.signed_bytes;
  bytes.resize(bytes.size() - pf::kSignatureTrailerSize);
  write_file(f.path, bytes);
  expect_refused_before_dlopen(*strict, f.path, trust(format_public_key(f.keys.public_key)), Error::IntegrityError,
                               "the program is not signed");
  // Another runtime's modules are not bound by it.
  auto lax = Runtime::create();
  ASSERT_TRUE(lax.ok());
  Module module(*lax, f.path);
  EXPECT_EQ(run_forward(module), (std::vector<float>{3, 6, 9}));
}

TEST(SignedProgram, BadProgramOptionsAreRejected) {
  Fixture f = make_signed_program("signed-options");
  BackendOptions program;
  program.set("require_signatures", true);
  LoadBackendOptionsMap options;
  options.set_options(kProgramOptions, program);
  Module module(f.path);
  EXPECT_EQ(module.load(options), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("unknown load option 'program.require_signatures'"), std::string::npos)
      << last_error_message();
  BackendOptions typed;
  typed.set("require_signature", "yes");
  options.set_options(kProgramOptions, typed);
  EXPECT_EQ(module.load(options), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("must be a bool"), std::string::npos) << last_error_message();
  BackendOptions bad_key;
  bad_key.set("require_signature", true);
  bad_key.set("trusted_keys", "kiln-ed25519-public 1234");
  options.set_options(kProgramOptions, bad_key);
  EXPECT_EQ(module.load(options), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("load option 'program.trusted_keys' line 1"), std::string::npos)
      << last_error_message();
  // That Module asked for a signature: it requires one from now on, and no
  // key is trusted.
  EXPECT_EQ(module.load(), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("no key is trusted"), std::string::npos) << last_error_message();
  // Program options belong to load(), not to load_method().
  Module plain(f.path);
  ASSERT_EQ(plain.load(), Error::Ok) << last_error_message();
  options.set_options(kProgramOptions, BackendOptions());
  EXPECT_EQ(plain.load_method("forward", &options), Error::InvalidArgument);
  // The same once the method is loaded (the cache used to answer Ok).
  ASSERT_EQ(plain.load_method("forward"), Error::Ok) << last_error_message();
  EXPECT_EQ(plain.load_method("forward", &options), Error::InvalidArgument);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// After a refused load(require_signature), no other entry point may load the
// program without the policy: each repeats the refused request.
TEST(SignedProgram, ARefusedPolicyIsStickyOnEveryPath) {
  Fixture f = make_signed_program("signed-sticky");
  auto bytes = f.signed_bytes;
  bytes.resize(bytes.size() - pf::kSignatureTrailerSize);  // unsigned
  write_file(f.path, bytes);
  const size_t objects = loaded_objects();
  Module module(f.path);
  ASSERT_EQ(module.load(trust(format_public_key(f.keys.public_key))), Error::IntegrityError);
  std::vector<float> x = {1, 2, 3};
  auto input = Tensor::from_blob(x.data(), std::vector<int64_t>{3}, std::vector<int64_t>{1}, DType::Float32);
  ASSERT_TRUE(input.ok());
  auto expect_refused = [&](Error got, const char* path) {
    EXPECT_EQ(got, Error::IntegrityError) << path;
    EXPECT_NE(last_error_message().find("the program is not signed"), std::string::npos)
        << path << ": " << last_error_message();
  };
  expect_refused(module.forward({*input}).error(), "forward");
  expect_refused(module.execute("forward", {*input}).error(), "execute");
  expect_refused(module.load_method("forward"), "load_method");
  expect_refused(module.method_names().error(), "method_names");
  expect_refused(module.method_meta("forward").error(), "method_meta");
  EXPECT_FALSE(module.is_loaded());
  EXPECT_EQ(loaded_objects(), objects) << "a library was loaded after the policy refused the program";
  // An explicit load without the option still requires a signature, and
  // switching the requirement off is refused by name.
  EXPECT_NE(module.load(), Error::Ok);
  BackendOptions off;
  off.set("require_signature", false);
  LoadBackendOptionsMap options;
  options.set_options(kProgramOptions, off);
  EXPECT_EQ(module.load(options), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("cannot be lifted"), std::string::npos) << last_error_message();
  EXPECT_EQ(loaded_objects(), objects);
}

// Methods loaded before a policy was asked for are dropped when it refuses
// the program: nothing keeps running that the policy did not accept.
TEST(SignedProgram, ARefusedPolicyUnloadsWhatWasLoadedWithoutIt) {
  Fixture f = make_signed_program("signed-late-policy");
  auto bytes = f.signed_bytes;
  bytes.resize(bytes.size() - pf::kSignatureTrailerSize);
  write_file(f.path, bytes);
  Module module(f.path);
  ASSERT_EQ(module.load(), Error::Ok) << last_error_message();
  EXPECT_EQ(run_forward(module), (std::vector<float>{3, 6, 9}));
  ASSERT_EQ(module.load(trust(format_public_key(f.keys.public_key))), Error::IntegrityError);
  EXPECT_FALSE(module.is_method_loaded("forward"));
  std::vector<float> x = {1, 2, 3};
  auto input = Tensor::from_blob(x.data(), std::vector<int64_t>{3}, std::vector<int64_t>{1}, DType::Float32);
  EXPECT_EQ(module.forward({*input}).error(), Error::IntegrityError);
}

// A policy accepted once covers the loads made later on the caller's behalf,
// and the verified copies serve them (and nothing needs them afterwards).
TEST(SignedProgram, AnAcceptedPolicyCoversLaterLoads) {
  Fixture f = make_signed_program("signed-accepted");
  Module module(f.path);
  ASSERT_EQ(module.load(trust(format_public_key(f.keys.public_key))), Error::Ok) << last_error_message();
  EXPECT_EQ(run_forward(module), (std::vector<float>{3, 6, 9}));
  // Unsigning the file on disk changes nothing for this Module.
  auto bytes = f.signed_bytes;
  bytes.resize(bytes.size() - pf::kSignatureTrailerSize);
  write_file(f.path, bytes);
  ASSERT_EQ(module.unload_method("forward"), Error::Ok);
  EXPECT_EQ(run_forward(module), (std::vector<float>{3, 6, 9}));
}

}  // namespace
}  // namespace kiln
