// Truncated, corrupt and adversarial program files: each must give an Error
// naming the problem, never a crash. Header-level damage is applied to a
// file from ProgramWriter; FlatBuffer-level damage is built directly with the
// generated FlatBuffers API so the writer's own checks are bypassed.
#include <gtest/gtest.h>

#include "kiln/program_file.h"
#include "kiln_program_generated.h"
#include "program/file_format.h"
#include "program/program_writer.h"
#include "program/sha256.h"
#include "test_util.h"

namespace kiln {
namespace {

namespace pf = program_format;
using testing_util::pattern;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

// ---- raw FlatBuffer construction ---------------------------------------------

struct RawNamed {
  std::string key;
  int32_t segment = -1;
  int32_t external_file = -1;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t alignment = 64;
  std::vector<uint8_t> sha256;
};

struct RawMethod {
  std::string name = "forward";
  std::string backend = "aoti";
  std::string device = "cpu";
  bool omit_backend = false;  // leave a required field out
  int32_t dtype = 6;
  int64_t dim_size = 4;
  bool dim_dynamic = false;
  int64_t dim_min = 0, dim_max = -1;
  std::string library_key = "lib";
};

struct RawSpec {
  std::vector<fb::Segment> segments;
  std::vector<RawNamed> named;
  std::vector<RawMethod> methods;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<std::string> external_files;
  std::vector<uint8_t> segment_bytes;
  uint64_t base_alignment = 64;
};

std::vector<uint8_t> digest_of(const std::vector<uint8_t>& bytes, size_t offset, size_t size) {
  auto d = sha256({bytes.data() + offset, size});
  return {d.begin(), d.end()};
}

// A valid program: two 64-byte segments ("lib", "w"), one method using both.
RawSpec valid_spec() {
  RawSpec s;
  s.segment_bytes = pattern(128, 3, 1);
  s.segments = {fb::Segment(0, 64), fb::Segment(64, 64)};
  s.named = {RawNamed{"lib", 0, -1, 0, 64, 64, digest_of(s.segment_bytes, 0, 64)},
             RawNamed{"w", 1, -1, 0, 64, 64, digest_of(s.segment_bytes, 64, 64)}};
  s.methods = {RawMethod{}};
  s.metadata = {{"model", "raw"}};
  return s;
}

std::vector<uint8_t> build_raw(const RawSpec& s) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Method>> methods;
  for (const auto& m : s.methods) {
    std::vector<flatbuffers::Offset<fb::Dim>> dims = {
        fb::CreateDim(b, m.dim_size, m.dim_dynamic, m.dim_min, m.dim_max, 0)};
    std::vector<flatbuffers::Offset<fb::TensorSpec>> inputs = {fb::CreateTensorSpecDirect(b, "x", m.dtype, &dims)};
    auto name = b.CreateString(m.name);
    auto backend = m.omit_backend ? flatbuffers::Offset<flatbuffers::String>() : b.CreateString(m.backend);
    auto device = b.CreateString(m.device);
    auto in = b.CreateVector(inputs);
    auto lib = b.CreateString(m.library_key);
    fb::MethodBuilder mb(b);
    mb.add_name(name);
    if (!m.omit_backend) mb.add_backend(backend);
    mb.add_device(device);
    mb.add_inputs(in);
    mb.add_library_key(lib);
    // Finish() asserts (debug builds) that required fields are set; EndTable
    // does not, which is how a crafted file would look.
    methods.push_back(m.omit_backend ? flatbuffers::Offset<fb::Method>(b.EndTable(mb.start_)) : mb.Finish());
  }
  std::vector<flatbuffers::Offset<fb::NamedData>> named;
  for (const auto& n : s.named)
    named.push_back(fb::CreateNamedDataDirect(b, n.key.c_str(), n.segment, n.external_file, n.offset, n.size,
                                              n.alignment, &n.sha256));
  std::vector<flatbuffers::Offset<fb::KeyValue>> metadata;
  for (const auto& [k, v] : s.metadata) metadata.push_back(fb::CreateKeyValueDirect(b, k.c_str(), v.c_str()));
  std::vector<flatbuffers::Offset<flatbuffers::String>> files;
  for (const auto& f : s.external_files) files.push_back(b.CreateString(f));
  auto root = fb::CreateProgram(b, b.CreateVector(methods), b.CreateVector(named), b.CreateVectorOfStructs(s.segments),
                                b.CreateVector(metadata), b.CreateVector(files));
  fb::FinishProgramBuffer(b, root);

  pf::ProgramHeader h;
  h.version = kProgramVersion;
  h.header_size = pf::kProgramHeaderSize;
  h.flatbuffer_offset = pf::kProgramHeaderSize;
  h.flatbuffer_size = b.GetSize();
  h.segment_base_offset = pf::align_up(h.flatbuffer_offset + h.flatbuffer_size, s.base_alignment);
  h.segment_data_size = s.segment_bytes.size();
  h.flatbuffer_sha256 = sha256({b.GetBufferPointer(), b.GetSize()});
  auto header = pf::encode_program_header(h);
  std::vector<uint8_t> out;
  out.reserve(h.segment_base_offset + s.segment_bytes.size());
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  out.resize(h.segment_base_offset, 0);
  out.insert(out.end(), s.segment_bytes.begin(), s.segment_bytes.end());
  return out;
}

// ---- header patching -----------------------------------------------------------

pf::ProgramHeader header_of(const std::vector<uint8_t>& f) { return pf::decode_program_header(f.data()); }

void put64(std::vector<uint8_t>* f, uint64_t offset, uint64_t v) { pf::store_le64(f->data() + offset, v); }
void put32(std::vector<uint8_t>* f, uint64_t offset, uint32_t v) { pf::store_le32(f->data() + offset, v); }

// Recomputes the header's FlatBuffer digest after the FlatBuffer was edited;
// `h` locates the FlatBuffer (the file's own header may have been damaged).
void refresh_digest(std::vector<uint8_t>* f, const pf::ProgramHeader& h) {
  const auto d = sha256({f->data() + h.flatbuffer_offset, static_cast<size_t>(h.flatbuffer_size)});
  std::copy(d.begin(), d.end(), f->begin() + pf::kOffFlatbufferSha256);
}
void refresh_digest(std::vector<uint8_t>* f) { refresh_digest(f, header_of(*f)); }

void expect_rejected(const std::vector<uint8_t>& bytes, Error code, const std::string& needle) {
  clear_error();
  auto p = ProgramFile::from_bytes(bytes);
  ASSERT_FALSE(p.ok()) << "accepted a file that should fail with: " << needle;
  EXPECT_EQ(p.error(), code) << last_error_message();
  EXPECT_NE(last_error_message().find(needle), std::string::npos)
      << "message \"" << last_error_message() << "\" does not mention \"" << needle << "\"";
}

std::vector<uint8_t> valid_file() { return build_raw(valid_spec()); }

TEST(ProgramMalformed, ValidBaselineIsAccepted) {
  auto p = ProgramFile::from_bytes(valid_file());
  ASSERT_TRUE(p.ok()) << last_error_message();
  auto lib = (*p)->read_named_data("lib");
  ASSERT_TRUE(lib.ok());
  const auto region = pattern(128, 3, 1);
  EXPECT_EQ(std::vector<uint8_t>(lib->begin(), lib->end()), std::vector<uint8_t>(region.begin(), region.begin() + 64));
}

TEST(ProgramMalformed, TruncatedAtSeveralPoints) {
  const auto f = valid_file();
  const auto h = header_of(f);
  expect_rejected({}, Error::InvalidProgram, "truncated");
  expect_rejected({f.begin(), f.begin() + 5}, Error::InvalidProgram, "8-byte magic");
  expect_rejected({f.begin(), f.begin() + 40}, Error::InvalidProgram, "80-byte header");
  expect_rejected({f.begin(), f.begin() + static_cast<long>(h.flatbuffer_offset + 10)}, Error::InvalidProgram,
                  "flatbuffer_offset/flatbuffer_size");
  expect_rejected({f.begin(), f.end() - 1}, Error::InvalidProgram, "segment_base_offset/segment_data_size");
}

TEST(ProgramMalformed, EveryTruncationFailsCleanly) {
  const auto f = valid_file();
  for (size_t n = 0; n < f.size(); ++n) {
    auto p = ProgramFile::from_bytes({f.data(), n});
    EXPECT_FALSE(p.ok()) << "truncated to " << n << " bytes was accepted";
  }
}

TEST(ProgramMalformed, RandomByteDamageNeverCrashes) {
  // Each single-byte change is either caught or harmless; the point is that
  // none reads out of bounds (run under KILN_SANITIZE=ON to prove it).
  auto f = valid_file();
  const auto h = header_of(f);
  for (size_t i = 0; i < f.size(); ++i) {
    for (uint8_t x : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      auto g = f;
      g[i] ^= x;
      if (i >= pf::kOffFlatbufferSha256 + 32) refresh_digest(&g, h);  // reach the Verifier and the semantic checks, not just the digest
      auto p = ProgramFile::from_bytes(g);
      if (p.ok()) (void)(*p)->read_named_data("lib");
    }
  }
}

TEST(ProgramMalformed, RandomMultiByteFlatbufferDamageNeverCrashes) {
  const auto f = valid_file();
  const auto h = header_of(f);
  uint32_t x = 2463534242u;  // xorshift: reproducible
  auto next = [&] { return x ^= x << 13, x ^= x >> 17, x ^= x << 5; };
  int accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto g = f;
    const int changes = 1 + static_cast<int>(next() % 4);
    for (int c = 0; c < changes; ++c)
      g[h.flatbuffer_offset + next() % h.flatbuffer_size] = static_cast<uint8_t>(next());
    refresh_digest(&g, h);
    auto p = ProgramFile::from_bytes(g);
    if (!p.ok()) continue;
    ++accepted;  // damage to strings/values can leave a valid program
    for (const auto& info : (*p)->named_data()) (void)(*p)->read_named_data(info.key);
  }
  EXPECT_LT(accepted, 3000);
}

TEST(ProgramMalformed, BadMagic) {
  auto f = valid_file();
  f[0] = 'X';
  expect_rejected(f, Error::InvalidProgram, "bad magic at offset 0");
}

TEST(ProgramMalformed, FutureAndZeroVersion) {
  auto f = valid_file();
  put32(&f, pf::kOffVersion, kProgramVersion + 1);
  expect_rejected(f, Error::InvalidProgram, "format_version (offset 8) is 2");
  put32(&f, pf::kOffVersion, 0);
  expect_rejected(f, Error::InvalidProgram, "format_version");
}

TEST(ProgramMalformed, HeaderSizeTooSmall) {
  auto f = valid_file();
  put32(&f, pf::kOffHeaderSize, 40);
  expect_rejected(f, Error::InvalidProgram, "header_size (offset 12)");
}

TEST(ProgramMalformed, FlatbufferOffsetOutOfRange) {
  auto f = valid_file();
  put64(&f, pf::kOffFlatbufferOffset, f.size() + 8);
  expect_rejected(f, Error::InvalidProgram, "flatbuffer_offset/flatbuffer_size (offsets 16/24)");
  f = valid_file();
  put64(&f, pf::kOffFlatbufferOffset, 0xfffffffffffffff8ull);  // offset + size overflows
  expect_rejected(f, Error::InvalidProgram, "flatbuffer_offset");
  f = valid_file();
  put64(&f, pf::kOffFlatbufferOffset, 40);  // inside the header
  expect_rejected(f, Error::InvalidProgram, "flatbuffer_offset");
  f = valid_file();
  // The FlatBuffer would run into the segment region.
  put64(&f, pf::kOffFlatbufferSize, header_of(f).segment_base_offset - header_of(f).flatbuffer_offset + 8);
  expect_rejected(f, Error::InvalidProgram, "segment_base_offset");
}

TEST(ProgramMalformed, SegmentRegionOutOfRangeOrTrailingBytes) {
  auto f = valid_file();
  put64(&f, pf::kOffSegmentDataSize, 0xffffffffffffff00ull);
  expect_rejected(f, Error::InvalidProgram, "segment_base_offset/segment_data_size (offsets 32/40)");
  f = valid_file();
  f.push_back(0);
  expect_rejected(f, Error::InvalidProgram, "trailing bytes");
}

TEST(ProgramMalformed, CorruptedFlatbufferFailsDigest) {
  auto f = valid_file();
  f[header_of(f).flatbuffer_offset + 20] ^= 0x55;
  expect_rejected(f, Error::IntegrityError, "SHA-256 of the FlatBuffer");
}

TEST(ProgramMalformed, CorruptedFlatbufferWithMatchingDigestFailsVerifier) {
  auto f = valid_file();
  put32(&f, header_of(f).flatbuffer_offset, 0x7ffffff0);  // root table offset far out of the buffer
  refresh_digest(&f);
  expect_rejected(f, Error::InvalidProgram, "fails verification");
  f = valid_file();
  f[header_of(f).flatbuffer_offset + 4] = 'X';  // file identifier
  refresh_digest(&f);
  expect_rejected(f, Error::InvalidProgram, "fails verification");
}

TEST(ProgramMalformed, MissingRequiredField) {
  auto s = valid_spec();
  s.methods[0].omit_backend = true;
  expect_rejected(build_raw(s), Error::InvalidProgram, "fails verification");
}

TEST(ProgramMalformed, SegmentOutOfBounds) {
  auto s = valid_spec();
  s.segments[1] = fb::Segment(100, 64);
  expect_rejected(build_raw(s), Error::InvalidProgram, "segments[1] (offset 100, size 64) lies outside");
  s.segments[1] = fb::Segment(0xffffffffffffffc0ull, 64);  // offset + size overflows
  expect_rejected(build_raw(s), Error::InvalidProgram, "segments[1]");
}

TEST(ProgramMalformed, MisalignedSegment) {
  auto s = valid_spec();
  s.segment_bytes = pattern(136, 3, 1);
  s.segments[1] = fb::Segment(72, 64);  // 8-byte aligned only
  s.named[1].sha256 = digest_of(s.segment_bytes, 72, 64);
  expect_rejected(build_raw(s), Error::InvalidProgram, "is not aligned to 64");
}

TEST(ProgramMalformed, OverlappingSegments) {
  auto s = valid_spec();
  s.segments[1] = fb::Segment(32, 64);
  s.named[1].alignment = 32;
  expect_rejected(build_raw(s), Error::InvalidProgram, "overlap");
}

TEST(ProgramMalformed, NamedDataPointsAtMissingSegment) {
  auto s = valid_spec();
  s.named[1].segment = 7;
  expect_rejected(build_raw(s), Error::InvalidProgram, "segment 7 does not exist");
}

TEST(ProgramMalformed, NamedDataSizeMismatch) {
  auto s = valid_spec();
  s.named[0].size = 65;
  expect_rejected(build_raw(s), Error::InvalidProgram, "size 65 does not match segments[0] size 64");
}

TEST(ProgramMalformed, NamedDataLocationAndAlignmentFields) {
  auto s = valid_spec();
  s.named[0].segment = -1;  // neither segment nor external
  expect_rejected(build_raw(s), Error::InvalidProgram, "exactly one of a segment");
  s = valid_spec();
  s.named[0].alignment = 48;
  expect_rejected(build_raw(s), Error::InvalidProgram, "alignment 48 is not a power of two");
  s = valid_spec();
  s.named[0].alignment = 8192;
  expect_rejected(build_raw(s), Error::InvalidProgram, "alignment 8192");
  s = valid_spec();
  s.named[0].sha256.pop_back();
  expect_rejected(build_raw(s), Error::InvalidProgram, "sha256 holds 31 bytes");
  s = valid_spec();
  s.named[0].external_file = 0;  // both, and no external files exist
  expect_rejected(build_raw(s), Error::InvalidProgram, "exactly one of");
}

TEST(ProgramMalformed, UnreferencedSegment) {
  auto s = valid_spec();
  s.named.pop_back();
  expect_rejected(build_raw(s), Error::InvalidProgram, "segments[1] is not referenced");
}

TEST(ProgramMalformed, UnknownDtype) {
  auto s = valid_spec();
  s.methods[0].dtype = 8;  // c10 ComplexHalf: not a Kiln dtype
  expect_rejected(build_raw(s), Error::InvalidProgram, "unknown dtype code 8");
}

TEST(ProgramMalformed, BadDims) {
  auto s = valid_spec();
  s.methods[0].dim_size = -3;
  expect_rejected(build_raw(s), Error::InvalidProgram, "negative size -3");
  s = valid_spec();
  s.methods[0].dim_dynamic = true;
  s.methods[0].dim_min = 8;
  s.methods[0].dim_max = 2;
  expect_rejected(build_raw(s), Error::InvalidProgram, "bounds [8, 2]");
}

TEST(ProgramMalformed, DuplicatesAndEmptyNames) {
  auto s = valid_spec();
  s.methods.push_back(RawMethod{});
  expect_rejected(build_raw(s), Error::InvalidProgram, "methods[1] 'forward': duplicate method name");
  s = valid_spec();
  s.named[1].key = "lib";
  expect_rejected(build_raw(s), Error::InvalidProgram, "named_data[1] 'lib': duplicate key");
  s = valid_spec();
  s.metadata.push_back({"model", "again"});
  expect_rejected(build_raw(s), Error::InvalidProgram, "metadata[1]: duplicate key 'model'");
  s = valid_spec();
  s.methods[0].name = "";
  expect_rejected(build_raw(s), Error::InvalidProgram, "methods[0] has an empty name");
  s = valid_spec();
  s.methods[0].device = "";
  expect_rejected(build_raw(s), Error::InvalidProgram, "empty device");
}

TEST(ProgramMalformed, MethodKeyNamesNoEntry) {
  auto s = valid_spec();
  s.methods[0].library_key = "nope";
  expect_rejected(build_raw(s), Error::InvalidProgram, "library_key 'nope' names no named data entry");
}

TEST(ProgramMalformed, ExternalFileNameWithPathIsRejected) {
  auto s = valid_spec();
  s.external_files = {"../../etc/passwd"};
  expect_rejected(build_raw(s), Error::InvalidProgram, "is not a plain file name");
}

TEST(ProgramMalformed, CorruptedLibraryBytesFailOnlyAtNamedDataBytes) {
  auto f = valid_file();
  f[header_of(f).segment_base_offset + 3] ^= 0x01;  // inside "lib"
  auto p = ProgramFile::from_bytes(f);
  ASSERT_TRUE(p.ok()) << "open must not hash named data: " << last_error_message();
  auto lib = (*p)->read_named_data("lib");
  EXPECT_EQ(lib.error(), Error::IntegrityError);
  EXPECT_NE(last_error_message().find("SHA-256 of named data 'lib'"), std::string::npos) << last_error_message();
  // The failure is cached and reported again; unverified access still works.
  EXPECT_EQ((*p)->read_named_data("lib").error(), Error::IntegrityError);
  EXPECT_TRUE((*p)->read_named_data("lib", /*verify_digest=*/false).ok());
  EXPECT_TRUE((*p)->read_named_data("w").ok());
}

// ---- external data files ---------------------------------------------------------

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ProgramWriter w;
    ASSERT_EQ(w.add_named_data("lib", pattern(100, 1, 1)), Error::Ok);
    ASSERT_EQ(w.add_named_data("w", pattern(3000, 7, 7), 4096, /*external=*/true), Error::Ok);
    MethodInfo m;
    m.name = "forward";
    m.backend = "aoti";
    m.device = "cpu";
    m.library_key = "lib";
    m.weights_key = "w";
    ASSERT_EQ(w.add_method(m), Error::Ok);
    ASSERT_EQ(w.write(dir_.file("m.kiln"), dir_.file("weights.bin")), Error::Ok) << last_error_message();
  }
  TempDir dir_;
};

TEST_F(ExternalData, OpensNextToProgramAndChecksAlignment) {
  auto p = ProgramFile::open(dir_.file("m.kiln"));
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_EQ((*p)->external_file_names(), std::vector<std::string>{"weights.bin"});
  auto w = (*p)->read_named_data("w");
  ASSERT_TRUE(w.ok()) << last_error_message();
  EXPECT_EQ(std::vector<uint8_t>(w->begin(), w->end()), pattern(3000, 7, 7));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w->data()) % 4096, 0u);
  EXPECT_EQ((*p)->named_data()[1].external_file, 0);
}

TEST_F(ExternalData, MissingFileIsNotFoundNamingIt) {
  ASSERT_EQ(std::remove(dir_.file("weights.bin").c_str()), 0);
  auto p = ProgramFile::open(dir_.file("m.kiln"));
  EXPECT_EQ(p.error(), Error::NotFound);
  EXPECT_NE(last_error_message().find("weights.bin"), std::string::npos) << last_error_message();
}

TEST_F(ExternalData, ExplicitPathsMustMatchCount) {
  auto p = ProgramFile::open(dir_.file("m.kiln"), {dir_.file("weights.bin"), dir_.file("other.bin")});
  EXPECT_EQ(p.error(), Error::InvalidArgument);
  ASSERT_EQ(std::rename(dir_.file("weights.bin").c_str(), dir_.file("moved.bin").c_str()), 0);
  auto q = ProgramFile::open(dir_.file("m.kiln"), {dir_.file("moved.bin")});
  EXPECT_TRUE(q.ok()) << last_error_message();
}

TEST_F(ExternalData, FromBytesCannotFindExternalFile) {
  auto p = ProgramFile::from_bytes(read_file(dir_.file("m.kiln")));
  EXPECT_EQ(p.error(), Error::NotFound);
  EXPECT_NE(last_error_message().find("weights.bin"), std::string::npos);
}

TEST_F(ExternalData, DataFileHeaderIsValidated) {
  const auto good = read_file(dir_.file("weights.bin"));
  auto check = [&](std::vector<uint8_t> data, const std::string& needle) {
    write_file(dir_.file("weights.bin"), data);
    auto p = ProgramFile::open(dir_.file("m.kiln"));
    EXPECT_EQ(p.error(), Error::InvalidProgram) << needle;
    EXPECT_NE(last_error_message().find(needle), std::string::npos) << last_error_message();
  };
  auto bad_magic = good;
  bad_magic[4] = 'P';
  check(bad_magic, "bad magic");
  check({good.begin(), good.begin() + 20}, "truncated");
  auto future = good;
  pf::store_le32(future.data() + pf::kDataOffVersion, kProgramVersion + 1);
  check(future, "format_version");
  check({good.begin(), good.end() - 1}, "do not describe the file");
  auto small = good;  // data region shrunk below the entry: out of bounds
  pf::store_le64(small.data() + pf::kDataOffSize, 100);
  small.resize(pf::kDataBaseOffset + 100);
  check(small, "lies outside the data region");
}

TEST_F(ExternalData, CorruptedWeightsFailLazily) {
  auto data = read_file(dir_.file("weights.bin"));
  data[pf::kDataBaseOffset + 10] ^= 0xff;
  write_file(dir_.file("weights.bin"), data);
  auto p = ProgramFile::open(dir_.file("m.kiln"));
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_EQ((*p)->read_named_data("w").error(), Error::IntegrityError);
  EXPECT_NE(last_error_message().find("external data file 'weights.bin'"), std::string::npos) << last_error_message();
  EXPECT_TRUE((*p)->read_named_data("lib").ok());
}

}  // namespace
}  // namespace kiln
