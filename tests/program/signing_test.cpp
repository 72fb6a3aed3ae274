// Signed programs at the program layer: key files, the signature trailer's
// structure, sign -> verify round trips, and tampering with every part the
// signature protects (header, library, weights, external data, signature,
// signer key). The load-time policy is tested with a real library in
// tests/aoti/signed_program_test.cpp.
#include "kiln/signing.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "kiln/program_file.h"
#include "program/file_format.h"
#include "program/program_writer.h"
#include "program/signature.h"
#include "test_util.h"

namespace kiln {
namespace {

namespace pf = program_format;
using testing_util::pattern;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

const std::vector<uint8_t> kLibrary = pattern(500, 7, 3);
const std::vector<uint8_t> kWeights = pattern(2000, 11, 5);
const std::vector<uint8_t> kExternal = pattern(900, 13, 1);

// A program with a library, in-file weights, and (optionally) an external blob.
std::string write_program(const TempDir& dir, const std::vector<uint8_t>& library = kLibrary,
                          bool with_external = false) {
  ProgramWriter writer;
  MethodInfo m;
  m.name = "forward";
  m.backend = "aoti";
  m.device = "cpu";
  m.inputs = {TensorSpec{"x", DType::Float32, {DimSpec{4, false, 0, -1, ""}}}};
  m.outputs = m.inputs;
  m.library_key = "lib";
  m.weights_key = "weights";
  EXPECT_EQ(writer.add_method(m), Error::Ok) << last_error_message();
  EXPECT_EQ(writer.add_named_data("lib", library), Error::Ok);
  EXPECT_EQ(writer.add_named_data("weights", kWeights), Error::Ok);
  if (with_external) {
    EXPECT_EQ(writer.add_named_data("extra", kExternal, 64, /*external=*/true), Error::Ok);
  }
  const std::string path = dir.file("m.kiln");
  EXPECT_EQ(writer.write(path), Error::Ok) << last_error_message();
  return path;
}

// Offset of the first occurrence of `needle` in `haystack` (the tests' payloads are unique).
size_t find_bytes(const std::vector<uint8_t>& haystack, const std::vector<uint8_t>& needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end());
  EXPECT_NE(it, haystack.end());
  return static_cast<size_t>(it - haystack.begin());
}

struct Signed {
  TempDir dir;
  std::string path;
  KeyPair keys;
  std::vector<uint8_t> unsigned_bytes, signed_bytes;
};

Signed make_signed(bool with_external = false) {
  Signed s;
  s.path = write_program(s.dir, kLibrary, with_external);
  s.unsigned_bytes = read_file(s.path);
  auto keys = generate_key_pair();
  EXPECT_TRUE(keys.ok()) << last_error_message();
  s.keys = *keys;
  EXPECT_EQ(sign_program_file(s.path, s.keys.secret_key), Error::Ok) << last_error_message();
  s.signed_bytes = read_file(s.path);
  return s;
}

// Verifies `bytes` (written next to the signed program so external data resolves)
// against `trusted`; returns the error and leaves the message in last_error_message().
Error verify_bytes(const Signed& s, const std::vector<uint8_t>& bytes, std::vector<PublicKey> trusted) {
  write_file(s.path, bytes);
  auto program = ProgramFile::open(s.path);
  if (!program.ok()) return program.error();
  return verify_signed_program(**program, trusted);
}

std::string message() { return last_error_message(); }

// ---- keys --------------------------------------------------------------------

TEST(SigningKeys, FormatAndParseRoundTrip) {
  auto keys = generate_key_pair();
  ASSERT_TRUE(keys.ok()) << message();
  EXPECT_EQ(public_key_of(keys->secret_key), keys->public_key);
  const std::string pub = format_public_key(keys->public_key, "alice");
  EXPECT_EQ(pub, "kiln-ed25519-public " + public_key_hex(keys->public_key) + " alice\n");
  auto parsed = parse_public_keys("# trusted signers\n\n" + pub, "test");
  ASSERT_TRUE(parsed.ok()) << message();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0], keys->public_key);
  auto secret = parse_secret_key(format_secret_key(keys->secret_key), "test");
  ASSERT_TRUE(secret.ok()) << message();
  EXPECT_EQ(secret->seed, keys->secret_key.seed);
  // Two fresh pairs differ (the OS random source is used).
  auto other = generate_key_pair();
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->public_key, keys->public_key);
}

TEST(SigningKeys, SeveralKeysInOneTrustFile) {
  auto a = generate_key_pair(), b = generate_key_pair();
  ASSERT_TRUE(a.ok() && b.ok());
  auto parsed =
      parse_public_keys(format_public_key(a->public_key) + format_public_key(b->public_key, "b"), "t");
  ASSERT_TRUE(parsed.ok()) << message();
  EXPECT_EQ(*parsed, (std::vector<PublicKey>{a->public_key, b->public_key}));
}

TEST(SigningKeys, MalformedKeyTextIsNamed) {
  auto keys = generate_key_pair();
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(parse_public_keys("", "empty.pub").error(), Error::InvalidArgument);
  EXPECT_NE(message().find("empty.pub holds no public key"), std::string::npos) << message();
  EXPECT_EQ(parse_public_keys("ssh-ed25519 AAAA\n", "x.pub").error(), Error::InvalidArgument);
  EXPECT_NE(message().find("x.pub line 1 does not start with 'kiln-ed25519-public'"), std::string::npos)
      << message();
  EXPECT_EQ(parse_public_keys("\nkiln-ed25519-public abcd\n", "x.pub").error(), Error::InvalidArgument);
  EXPECT_NE(message().find("x.pub line 2: the key is not 64 hex digits"), std::string::npos) << message();
  EXPECT_EQ(parse_public_keys(format_secret_key(keys->secret_key), "s.pub").error(), Error::InvalidArgument);
  EXPECT_NE(message().find("holds a secret key"), std::string::npos) << message();
  EXPECT_EQ(parse_secret_key(format_public_key(keys->public_key), "p.key").error(), Error::InvalidArgument);
  EXPECT_NE(message().find("not a Kiln secret key"), std::string::npos) << message();
  EXPECT_EQ(
      parse_secret_key(format_secret_key(keys->secret_key) + format_secret_key(keys->secret_key), "two.key")
          .error(),
      Error::InvalidArgument);
  EXPECT_NE(message().find("exactly one key"), std::string::npos) << message();
  std::string bad_hex = format_secret_key(keys->secret_key);
  bad_hex[std::string("kiln-ed25519-secret ").size()] = 'g';
  EXPECT_EQ(parse_secret_key(bad_hex, "g.key").error(), Error::InvalidArgument);
  EXPECT_EQ(read_public_keys("/nonexistent/k.pub").error(), Error::NotFound);
}

TEST(SigningKeys, KeyPairFilesHaveSafeModesAndAreNeverOverwritten) {
  const TempDir dir;
  auto keys = generate_key_pair();
  ASSERT_TRUE(keys.ok());
  ASSERT_EQ(write_key_pair(*keys, dir.file("alice")), Error::Ok) << message();
  struct stat st {};
  ASSERT_EQ(::stat(dir.file("alice.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(dir.file("alice.pub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  auto secret = read_secret_key(dir.file("alice.key"));
  auto pub = read_public_keys(dir.file("alice.pub"));
  ASSERT_TRUE(secret.ok() && pub.ok()) << message();
  EXPECT_EQ(secret->seed, keys->secret_key.seed);
  EXPECT_EQ((*pub)[0], keys->public_key);

  auto other = generate_key_pair();
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(write_key_pair(*other, dir.file("alice")), Error::InvalidArgument);
  EXPECT_NE(message().find("already exists"), std::string::npos) << message();
  EXPECT_EQ(read_secret_key(dir.file("alice.key"))->seed, keys->secret_key.seed);  // untouched
}

// ---- sign and verify -----------------------------------------------------------

TEST(Signing, SignVerifyRoundTrip) {
  Signed s = make_signed();
  // The trailer is appended; nothing before it changes.
  ASSERT_EQ(s.signed_bytes.size(), s.unsigned_bytes.size() + pf::kSignatureTrailerSize);
  EXPECT_TRUE(std::equal(s.unsigned_bytes.begin(), s.unsigned_bytes.end(), s.signed_bytes.begin()));
  auto program = ProgramFile::open(s.path);
  ASSERT_TRUE(program.ok()) << message();
  const ProgramSignature* signature = (*program)->signature();
  ASSERT_NE(signature, nullptr);
  EXPECT_EQ(signature->algorithm, pf::kSignatureEd25519);
  EXPECT_EQ(signature->public_key, s.keys.public_key);
  EXPECT_EQ((*program)->file_size(), s.signed_bytes.size());
  EXPECT_EQ((*program)->read_content()->size(), s.unsigned_bytes.size());
  EXPECT_EQ((*program)->header_bytes().size(), pf::kProgramHeaderSize);
  const std::vector<PublicKey> trusted = {s.keys.public_key};
  EXPECT_EQ(verify_signed_program(**program, trusted), Error::Ok) << message();
  // The runtime reads a signed program like an unsigned one.
  auto lib = (*program)->read_named_data("lib");
  ASSERT_TRUE(lib.ok()) << message();
  EXPECT_TRUE(std::equal(lib->begin(), lib->end(), kLibrary.begin(), kLibrary.end()));
  // No temporary file is left next to the program.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(s.dir.path())) (void)entry, ++files;
  EXPECT_EQ(files, 1u);
}

TEST(Signing, FromBytesSeesTheSignature) {
  Signed s = make_signed();
  auto program = ProgramFile::from_bytes(s.signed_bytes);
  ASSERT_TRUE(program.ok()) << message();
  ASSERT_NE((*program)->signature(), nullptr);
  const std::vector<PublicKey> trusted = {s.keys.public_key};
  EXPECT_EQ(verify_signed_program(**program, trusted), Error::Ok) << message();
}

TEST(Signing, ResigningReplacesTheTrailer) {
  Signed s = make_signed();
  auto bob = generate_key_pair();
  ASSERT_TRUE(bob.ok());
  ASSERT_EQ(sign_program_file(s.path, bob->secret_key), Error::Ok) << message();
  const auto bytes = read_file(s.path);
  EXPECT_EQ(bytes.size(), s.signed_bytes.size());
  auto program = ProgramFile::open(s.path);
  ASSERT_TRUE(program.ok()) << message();
  EXPECT_EQ((*program)->signature()->public_key, bob->public_key);
  const std::vector<PublicKey> only_alice = {s.keys.public_key}, only_bob = {bob->public_key};
  EXPECT_EQ(verify_signed_program(**program, only_bob), Error::Ok) << message();
  EXPECT_EQ(verify_signed_program(**program, only_alice), Error::IntegrityError);
}

TEST(Signing, SignToAnotherPathKeepsTheOriginalAndItsMode) {
  const TempDir dir;
  const std::string path = write_program(dir);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  const auto before = read_file(path);
  auto keys = generate_key_pair();
  ASSERT_TRUE(keys.ok());
  ASSERT_EQ(sign_program_file(path, keys->secret_key, {}, dir.file("signed.kiln")), Error::Ok) << message();
  EXPECT_EQ(read_file(path), before);
  struct stat st {};
  ASSERT_EQ(::stat(dir.file("signed.kiln").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  auto program = ProgramFile::open(dir.file("signed.kiln"));
  ASSERT_TRUE(program.ok()) << message();
  const std::vector<PublicKey> trusted = {keys->public_key};
  EXPECT_EQ(verify_signed_program(**program, trusted), Error::Ok) << message();
}

TEST(Signing, RefusesToSignCorruptData) {
  const TempDir dir;
  const std::string path = write_program(dir);
  auto bytes = read_file(path);
  bytes[find_bytes(bytes, kWeights) + 10] ^= 0x01;
  write_file(path, bytes);
  auto keys = generate_key_pair();
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(sign_program_file(path, keys->secret_key), Error::IntegrityError);
  EXPECT_NE(message().find("not signing"), std::string::npos) << message();
  EXPECT_NE(message().find("'weights'"), std::string::npos) << message();
  EXPECT_EQ(read_file(path), bytes);  // left as it was
}

TEST(Signing, UnsignedProgramAndEmptyTrustAreRefused) {
  const TempDir dir;
  auto program = ProgramFile::open(write_program(dir));
  ASSERT_TRUE(program.ok()) << message();
  EXPECT_EQ((*program)->signature(), nullptr);
  EXPECT_EQ((*program)->read_content()->size(), (*program)->file_size());
  auto keys = generate_key_pair();
  ASSERT_TRUE(keys.ok());
  const std::vector<PublicKey> trusted = {keys->public_key};
  EXPECT_EQ(verify_signed_program(**program, trusted), Error::IntegrityError);
  EXPECT_NE(message().find("the program is not signed"), std::string::npos) << message();
  EXPECT_EQ(verify_signed_program(**program, {}), Error::InvalidArgument);
  EXPECT_NE(message().find("no trusted public keys"), std::string::npos) << message();
}

// ---- tampering -----------------------------------------------------------------

TEST(SigningTamper, EveryHeaderByteIsProtected) {
  Signed s = make_signed();
  const std::vector<PublicKey> trusted = {s.keys.public_key};
  for (size_t offset = 0; offset < pf::kProgramHeaderSize; ++offset) {
    auto bytes = s.signed_bytes;
    bytes[offset] ^= 0x01;
    const Error error = verify_bytes(s, bytes, trusted);
    EXPECT_NE(error, Error::Ok) << "header byte " << offset << " flipped but the program still verifies";
    EXPECT_FALSE(message().empty());
  }
}

// The attack a header signature exists for: a consistent program (header
// digest, FlatBuffer digests and data all match) with a different library,
// carrying the original's signature trailer.
TEST(SigningTamper, RebuiltProgramWithTheOldSignatureIsRefused) {
  Signed s = make_signed();
  const TempDir other_dir;
  auto trojan = pattern(kLibrary.size(), 7, 4);
  auto rebuilt = read_file(write_program(other_dir, trojan));
  ASSERT_TRUE(ProgramFile::from_bytes(rebuilt).ok()) << message();  // consistent on its own
  rebuilt.insert(rebuilt.end(), s.signed_bytes.end() - pf::kSignatureTrailerSize, s.signed_bytes.end());
  EXPECT_EQ(verify_bytes(s, rebuilt, {s.keys.public_key}), Error::IntegrityError);
  EXPECT_NE(message().find("does not match the program header"), std::string::npos) << message();
}

TEST(SigningTamper, LibraryByteIsRefusedNamingTheEntry) {
  Signed s = make_signed();
  auto bytes = s.signed_bytes;
  bytes[find_bytes(bytes, kLibrary) + 100] ^= 0x80;
  EXPECT_EQ(verify_bytes(s, bytes, {s.keys.public_key}), Error::IntegrityError);
  EXPECT_NE(message().find("SHA-256 of named data 'lib'"), std::string::npos) << message();
}

TEST(SigningTamper, WeightsByteIsRefusedNamingTheEntry) {
  Signed s = make_signed();
  auto bytes = s.signed_bytes;
  bytes[find_bytes(bytes, kWeights) + kWeights.size() - 1] ^= 0x01;
  EXPECT_EQ(verify_bytes(s, bytes, {s.keys.public_key}), Error::IntegrityError);
  EXPECT_NE(message().find("SHA-256 of named data 'weights'"), std::string::npos) << message();
}

TEST(SigningTamper, ExternalDataByteIsRefused) {
  Signed s = make_signed(/*with_external=*/true);
  const std::string data_path = s.path + ".data";
  auto data = read_file(data_path);
  data[find_bytes(data, kExternal) + 5] ^= 0x01;
  write_file(data_path, data);
  EXPECT_EQ(verify_bytes(s, s.signed_bytes, {s.keys.public_key}), Error::IntegrityError);
  EXPECT_NE(message().find("SHA-256 of named data 'extra'"), std::string::npos) << message();
  EXPECT_NE(message().find("external data file"), std::string::npos) << message();
}

TEST(SigningTamper, SignatureBytesAreRefused) {
  Signed s = make_signed();
  const size_t trailer = s.unsigned_bytes.size();
  for (size_t i : {size_t{0}, size_t{31}, size_t{32}, size_t{63}}) {
    auto bytes = s.signed_bytes;
    bytes[trailer + pf::kSigOffSignature + i] ^= 0x01;
    EXPECT_EQ(verify_bytes(s, bytes, {s.keys.public_key}), Error::IntegrityError) << "signature byte " << i;
    EXPECT_NE(message().find("does not match the program header"), std::string::npos) << message();
  }
}

TEST(SigningTamper, PublicKeyBytesAreRefused) {
  Signed s = make_signed();
  const size_t trailer = s.unsigned_bytes.size();
  auto bytes = s.signed_bytes;
  bytes[trailer + pf::kSigOffPublicKey + 7] ^= 0x01;
  EXPECT_EQ(verify_bytes(s, bytes, {s.keys.public_key}), Error::IntegrityError);
  EXPECT_NE(message().find("which is not one of the 1 trusted keys"), std::string::npos) << message();
  // Trusting the altered key does not help: the signature was not made with it.
  PublicKey altered = s.keys.public_key;
  altered[7] ^= 0x01;
  EXPECT_EQ(verify_bytes(s, bytes, {altered}), Error::IntegrityError);
  EXPECT_NE(message().find("does not match the program header"), std::string::npos) << message();
}

TEST(SigningTamper, EveryTrailerByteIsProtected) {
  Signed s = make_signed();
  const size_t trailer = s.unsigned_bytes.size();
  for (size_t i = 0; i < pf::kSignatureTrailerSize; ++i) {
    auto bytes = s.signed_bytes;
    bytes[trailer + i] ^= 0x01;
    EXPECT_NE(verify_bytes(s, bytes, {s.keys.public_key}), Error::Ok) << "trailer byte " << i;
  }
}

// ---- trailer structure -----------------------------------------------------------

TEST(SignatureTrailer, TruncatedTrailerIsInvalid) {
  Signed s = make_signed();
  for (size_t cut : {size_t{1}, size_t{50}, size_t{pf::kSignatureTrailerSize - 8}}) {
    auto bytes = s.signed_bytes;
    bytes.resize(bytes.size() - cut);
    auto program = ProgramFile::from_bytes(bytes);
    ASSERT_FALSE(program.ok());
    EXPECT_EQ(program.error(), Error::InvalidProgram);
    EXPECT_NE(message().find("signature trailer after the last segment"), std::string::npos) << message();
    EXPECT_NE(message().find("truncated"), std::string::npos) << message();
  }
}

TEST(SignatureTrailer, GarbageAfterTheSegmentsIsInvalid) {
  Signed s = make_signed();
  auto bytes = s.unsigned_bytes;
  bytes.insert(bytes.end(), 112, 0xAB);
  auto program = ProgramFile::from_bytes(bytes);
  ASSERT_FALSE(program.ok());
  EXPECT_NE(message().find("not a signature trailer"), std::string::npos) << message();
  // Bytes appended after a valid trailer break its "ends the file" rule.
  bytes = s.signed_bytes;
  bytes.push_back(0);
  program = ProgramFile::from_bytes(bytes);
  ASSERT_FALSE(program.ok());
  EXPECT_NE(message().find("must end the file exactly"), std::string::npos) << message();
}

// Bytes after the trailer's fields would be covered by nothing: a trailer
// longer than this version's (even one that says so in its size field) is
// refused, so no byte of a signed file can change unnoticed.
TEST(SignatureTrailer, LongerTrailerIsRefused) {
  Signed s = make_signed();
  for (uint8_t fill : {uint8_t{0}, uint8_t{0x5A}}) {
    auto bytes = s.signed_bytes;
    const size_t trailer = s.unsigned_bytes.size();
    bytes.insert(bytes.end(), 16, fill);
    pf::store_le32(bytes.data() + trailer + pf::kSigOffSize, pf::kSignatureTrailerSize + 16);
    auto program = ProgramFile::from_bytes(bytes);
    ASSERT_FALSE(program.ok());
    EXPECT_EQ(program.error(), Error::InvalidProgram);
    EXPECT_NE(message().find("knows the 112-byte trailer only"), std::string::npos) << message();
  }
}

TEST(SignatureTrailer, UnknownAlgorithmIsNotSupported) {
  Signed s = make_signed();
  auto bytes = s.signed_bytes;
  pf::store_le32(bytes.data() + s.unsigned_bytes.size() + pf::kSigOffAlgorithm, 7);
  auto program = ProgramFile::from_bytes(bytes);
  ASSERT_TRUE(program.ok()) << message();
  const std::vector<PublicKey> trusted = {s.keys.public_key};
  EXPECT_EQ(verify_signed_program(**program, trusted), Error::NotSupported);
  EXPECT_NE(message().find("algorithm 7"), std::string::npos) << message();
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// A signature must leave no byte of a signed program unchecked: flipping any
// single byte of the program file (padding between segments, after the
// FlatBuffer, in the trailer...) or of its external data file (header,
// padding, data) is refused by open() or by verification.
TEST(SigningTamper, EveryByteOfASignedProgramAndItsDataFileIsChecked) {
  for (bool with_external : {false, true}) {
    SCOPED_TRACE(with_external ? "with an external data file" : "program file only");
    Signed s = make_signed(with_external);
    const std::vector<PublicKey> trusted = {s.keys.public_key};
    ASSERT_EQ(verify_bytes(s, s.signed_bytes, trusted), Error::Ok) << message();
    size_t unnoticed = 0;
    for (size_t i = 0; i < s.signed_bytes.size(); ++i) {
      auto bytes = s.signed_bytes;
      bytes[i] ^= 0x01;
      if (verify_bytes(s, bytes, trusted) == Error::Ok) {
        ++unnoticed;
        ADD_FAILURE() << "a flipped program byte at offset " << i << " went unnoticed";
      }
    }
    write_file(s.path, s.signed_bytes);
    if (with_external) {
      const std::string data_path = s.path + ".data";
      const auto data = read_file(data_path);
      for (size_t i = 0; i < data.size(); ++i) {
        auto bytes = data;
        bytes[i] ^= 0x01;
        write_file(data_path, bytes);
        if (verify_bytes(s, s.signed_bytes, trusted) == Error::Ok) {
          ++unnoticed;
          ADD_FAILURE() << "a flipped data file byte at offset " << i << " went unnoticed";
        }
      }
      write_file(data_path, data);
    }
    EXPECT_EQ(unnoticed, 0u);
  }
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// A crafted sparse file declaring a gigabyte of segment region that nothing
// covers: open() used to read all of it (seconds, or minutes for a terabyte)
// before any signature was checked. A gap longer than any padding a writer
// leaves is refused unread.
TEST(SigningTamper, AHugeUncoveredRegionIsRefusedWithoutReadingIt) {
  TempDir dir;
  const std::string path = write_program(dir);
  auto bytes = read_file(path);
  const uint64_t base = pf::load_le64(bytes.data() + pf::kOffSegmentBase);
  const uint64_t huge = uint64_t{1} << 30;
  pf::store_le64(bytes.data() + pf::kOffSegmentDataSize, huge - base);
  write_file(path, bytes);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(huge)), 0);  // sparse: no disk used
  const auto start = std::chrono::steady_clock::now();
  auto program = ProgramFile::open(path);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.error(), Error::InvalidProgram);
  EXPECT_NE(message().find("longer than any padding a Kiln writer leaves"), std::string::npos) << message();
  EXPECT_LT(seconds, 0.5) << "the gap was read";
}

// The data file's header is covered by no signature: its base offset must be
// exactly what the writer writes. A payload moved to another base (the bytes
// the runtime uses unchanged) was accepted before.
TEST(SigningTamper, ADataFileWithItsDataMovedIsRefused) {
  Signed s = make_signed(/*with_external=*/true);
  const std::string data_path = s.path + ".data";
  const auto data = read_file(data_path);
  std::vector<uint8_t> moved(data.begin(), data.begin() + pf::kDataHeaderSize);
  moved.resize(2 * pf::kDataBaseOffset, 0);
  moved.insert(moved.end(), data.begin() + pf::kDataBaseOffset, data.end());
  pf::store_le64(moved.data() + pf::kDataOffBase, 2 * pf::kDataBaseOffset);
  write_file(data_path, moved);
  const std::vector<PublicKey> trusted = {s.keys.public_key};
  EXPECT_NE(verify_bytes(s, s.signed_bytes, trusted), Error::Ok);
  EXPECT_NE(message().find("the data starts at 4096"), std::string::npos) << message();
}

}  // namespace
}  // namespace kiln
