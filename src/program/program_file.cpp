// Reader of the `.kiln` program file: reads the header and FlatBuffer into
// private memory, validates every byte it will later trust (and that every
// byte no digest covers is the writer's zero padding), and decodes the
// FlatBuffer into plain C++ structs once so the runtime never touches
// unverified memory. Named data is read on demand with pread and checked on
// the private copy. See docs/program-format.md.
#include "kiln/program_file.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "kiln_program_generated.h"
#include "program/file_format.h"
#include "program/hashed_read.h"
#include "program/hex.h"
#include "program/private_buffer.h"
#include "program/regular_file.h"
#include "program/sha256.h"
#include "program/signature.h"
#include "program/zip_archive.h"

namespace kiln {

namespace pf = program_format;

namespace {

// FlatBuffers' own limit; the Verifier asserts on larger sizes, so check first.
constexpr uint64_t kMaxFlatbufferSize = 0x7fffffffu;
std::string quoted(std::string_view s) {
  // Built by append: GCC 12 flags `"'" + std::string(s)` with a false -Wrestrict.
  std::string out;
  out.reserve(s.size() + 2);
  out.append(1, '\'').append(s).append(1, '\'');
  return out;
}

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// Where a file's bytes come from: an open regular file (read with pread), or
// a private copy of bytes given in memory (from_bytes).
struct ByteSource {
  std::optional<RegularFile> file;
  std::shared_ptr<const PrivateBuffer> memory;
  std::string label;

  uint64_t size() const { return file ? file->size() : memory->size(); }
  Error read(uint64_t offset, std::span<uint8_t> out) const {
    if (file) return file->read_exact(offset, out);
    if (offset > memory->size() || out.size() > memory->size() - offset)
      return set_error(Error::Internal, label + ": read past the end of the bytes");
    if (!out.empty()) std::memcpy(out.data(), memory->data() + offset, out.size());
    return Error::Ok;
  }
  Result<std::vector<uint8_t>> read_vector(uint64_t offset, uint64_t size) const {
    std::vector<uint8_t> out(static_cast<size_t>(size));
    KILN_RETURN_IF_ERROR(read(offset, out));
    return out;
  }
};

// One external data file, after its header was validated.
struct DataFile {
  std::string path;
  ByteSource source;
  pf::DataHeader header;
};

// Where one named entry's bytes lie, and its live private copy if any.
struct EntryState {
  int32_t file = -1;     // -1: the program file; else index into data_files
  uint64_t offset = 0;   // absolute offset in that file
  std::mutex mutex;      // serialises reading and hashing this entry
  std::weak_ptr<const void> live;  // the copy handed out last, while anyone holds it
  std::span<const uint8_t> live_bytes;
  bool live_verified = false;      // its digest was checked on that very copy
};

// A range of a file that something covers (header, FlatBuffer, a segment,
// an entry, the trailer); the bytes between such ranges must be zero.
struct Covered {
  uint64_t begin = 0;
  uint64_t end = 0;
};

}  // namespace

struct ProgramFile::Impl {
  std::string label;  // "program file '<path>'" or "program bytes", prefix of every message
  ByteSource program;
  std::vector<DataFile> data_files;
  uint32_t version = 0;
  pf::ProgramHeader header;
  std::vector<uint8_t> header_copy;              // [0, header_size): what a signature covers
  std::shared_ptr<PrivateBuffer> flatbuffer;     // the verified FlatBuffer, page aligned
  std::vector<MethodInfo> methods;
  std::map<std::string, std::string> metadata;
  std::vector<NamedDataInfo> named_data;
  std::vector<std::string> external_file_names;
  std::unique_ptr<EntryState[]> entries;  // parallel to named_data
  std::map<std::string, size_t, std::less<>> named_index;
  std::map<std::string, size_t, std::less<>> method_index;
  std::vector<std::vector<Covered>> data_covered;  // per external file: its entries' ranges
  std::vector<Covered> program_covered;            // the program file's segments
  uint64_t content_size = 0;  // end of the last segment: where a signature trailer starts
  std::optional<ProgramSignature> signature;
  mutable std::atomic<bool> digests_required{false};

  Error fail(Error code, const std::string& message) const { return set_error(code, label + ": " + message); }
  Error invalid(const std::string& message) const { return fail(Error::InvalidProgram, message); }

  Error parse(const std::string& program_dir, const std::vector<std::string>& data_paths, bool have_dir);
  Error check_header();
  Error check_signature_trailer(uint64_t content_end);
  Error open_data_files(const fb::Program& root, const std::string& program_dir,
                        const std::vector<std::string>& data_paths, bool have_dir);
  Error decode_named_data(const fb::Program& root);
  Error decode_methods(const fb::Program& root);
  Error decode_key_values(const flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>* list,
                          const std::string& where, std::map<std::string, std::string>* out) const;
  Error decode_tensors(const flatbuffers::Vector<flatbuffers::Offset<fb::TensorSpec>>* list,
                       const std::string& where, std::vector<TensorSpec>* out) const;
  Error check_padding() const;
  Error check_program_padding(const ByteSource& source) const;
  Error check_gaps(const ByteSource& source, std::vector<Covered> covered, uint64_t end) const;
  Error check_zero(const ByteSource& source, uint64_t begin, uint64_t end, const std::string& where) const;
  const ByteSource& source_of(int32_t file) const { return file < 0 ? program : data_files[file].source; }
  Result<NamedBytes> read_entry(size_t index, bool verify) const;
};

Error ProgramFile::Impl::check_header() {
  const uint64_t file_size = program.size();
  const uint64_t head_size = std::min<uint64_t>(file_size, pf::kProgramHeaderSize);
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> head, program.read_vector(0, head_size));
  const uint8_t* p = head.data();
  if (file_size < pf::kProgramMagic.size())
    return invalid("truncated: " + std::to_string(file_size) + " bytes, shorter than the 8-byte magic at offset 0");
  if (std::memcmp(p, pf::kProgramMagic.data(), pf::kProgramMagic.size()) != 0)
    return invalid("bad magic at offset 0: expected \"KILNPROG\", found 0x" + to_hex({p, 8}) +
                   (ZipArchive::has_zip_magic({p, 8})
                        ? " (a ZIP archive: for a PyTorch .pt2 package, convert it with `kiln import` or load it "
                          "with Module / `kiln run`, which import it directly)"
                        : " (not a Kiln program file)"));
  if (file_size < pf::kProgramHeaderSize)
    return invalid("truncated: " + std::to_string(file_size) + " bytes, shorter than the " +
                   std::to_string(pf::kProgramHeaderSize) + "-byte header");
  pf::ProgramHeader h = pf::decode_program_header(p);
  if (h.version < kMinProgramVersion || h.version > kProgramVersion)
    return invalid("format_version (offset " + std::to_string(pf::kOffVersion) + ") is " + std::to_string(h.version) +
                   "; this reader accepts " + std::to_string(kMinProgramVersion) + ".." +
                   std::to_string(kProgramVersion) + (h.version > kProgramVersion ? " (written by a newer Kiln)" : ""));
  if (h.header_size < pf::kProgramHeaderSize || h.header_size > file_size)
    return invalid("header_size (offset " + std::to_string(pf::kOffHeaderSize) + ") is " +
                   std::to_string(h.header_size) + "; must be in [" + std::to_string(pf::kProgramHeaderSize) +
                   ", file size " + std::to_string(file_size) + "]");
  uint64_t fb_end = 0;
  if (h.flatbuffer_offset < h.header_size || h.flatbuffer_offset % pf::kFlatbufferAlignment != 0 ||
      !pf::checked_add(h.flatbuffer_offset, h.flatbuffer_size, &fb_end) || fb_end > file_size)
    return invalid("flatbuffer_offset/flatbuffer_size (offsets " + std::to_string(pf::kOffFlatbufferOffset) + "/" +
                   std::to_string(pf::kOffFlatbufferSize) + ") = " + std::to_string(h.flatbuffer_offset) + "/" +
                   std::to_string(h.flatbuffer_size) +
                   " do not lie inside the file after the header on an 8-byte boundary (header size " +
                   std::to_string(h.header_size) + ", file size " + std::to_string(file_size) + ")");
  if (h.flatbuffer_size < 8 || h.flatbuffer_size > kMaxFlatbufferSize)
    return invalid("flatbuffer_size (offset " + std::to_string(pf::kOffFlatbufferSize) + ") = " +
                   std::to_string(h.flatbuffer_size) + " is not a plausible FlatBuffer size");
  uint64_t seg_end = 0;
  if (h.segment_base_offset < fb_end || !pf::checked_add(h.segment_base_offset, h.segment_data_size, &seg_end) ||
      seg_end > file_size)
    return invalid("segment_base_offset/segment_data_size (offsets " + std::to_string(pf::kOffSegmentBase) + "/" +
                   std::to_string(pf::kOffSegmentDataSize) + ") = " + std::to_string(h.segment_base_offset) + "/" +
                   std::to_string(h.segment_data_size) + " do not lie inside the file after the FlatBuffer (which ends at " +
                   std::to_string(fb_end) + ", file size " + std::to_string(file_size) + ")");
  KILN_RETURN_IF_ERROR(check_signature_trailer(seg_end));
  // Every byte is read once: the header that was decoded above is the one a
  // signature is checked against (a second read could see other bytes, if the
  // file changes meanwhile), extended by whatever a later version appended.
  header_copy = std::move(head);
  if (h.header_size > pf::kProgramHeaderSize) {
    KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> rest,
                          program.read_vector(pf::kProgramHeaderSize, h.header_size - pf::kProgramHeaderSize));
    header_copy.insert(header_copy.end(), rest.begin(), rest.end());
  }
  // The FlatBuffer gets page-aligned memory of its own: it starts on an
  // 8-byte boundary of the file, so its scalars stay naturally aligned.
  KILN_ASSIGN_OR_RETURN(PrivateBuffer fb, PrivateBuffer::allocate(h.flatbuffer_size, label + ": FlatBuffer"));
  KILN_RETURN_IF_ERROR(program.read(h.flatbuffer_offset, {fb.mutable_data(), static_cast<size_t>(fb.size())}));
  const Sha256Digest digest = sha256(fb.bytes());
  if (digest != h.flatbuffer_sha256)
    return fail(Error::IntegrityError, "SHA-256 of the FlatBuffer (bytes " + std::to_string(h.flatbuffer_offset) + ".." +
                                           std::to_string(fb_end) + ") is " + to_hex(digest) + " but the header (offset " +
                                           std::to_string(pf::kOffFlatbufferSha256) + ") records " +
                                           to_hex(h.flatbuffer_sha256));
  flatbuffer = std::make_shared<PrivateBuffer>(std::move(fb));
  header = h;
  content_size = seg_end;
  return Error::Ok;
}

// The only bytes allowed after the last segment are one signature trailer of
// exactly the size this version writes, ending the file; anything else is
// corruption. Every field of the trailer is then checked by verification
// (algorithm, key, signature), so no byte of it goes unchecked.
Error ProgramFile::Impl::check_signature_trailer(uint64_t content_end) {
  const uint64_t file_size = program.size();
  if (content_end == file_size) return Error::Ok;
  const uint64_t tail_size = file_size - content_end;
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> tail,
                        program.read_vector(content_end, std::min<uint64_t>(tail_size, pf::kSignatureTrailerSize)));
  const std::string where = " after the last segment (offset " + std::to_string(content_end) + ")";
  if (!pf::has_signature_magic(tail))
    return invalid("file size " + std::to_string(file_size) + " does not match the header, which says the segments end at " +
                   std::to_string(content_end) + " (" + std::to_string(tail_size) + " trailing bytes" +
                   " that are not a signature trailer: no \"KILNSIG1\" magic)");
  if (tail_size < pf::kSignatureTrailerSize)
    return invalid("signature trailer" + where + " is truncated: " + std::to_string(tail_size) +
                   " bytes, shorter than the " + std::to_string(pf::kSignatureTrailerSize) + "-byte trailer");
  const pf::SignatureTrailer t = pf::decode_signature_trailer(tail.data());
  if (t.size != tail_size)
    return invalid("signature trailer" + where + " records its size as " + std::to_string(t.size) + " but " +
                   std::to_string(tail_size) + " bytes follow the last segment (it must end the file exactly)");
  if (t.size != pf::kSignatureTrailerSize)
    return invalid("signature trailer" + where + " is " + std::to_string(t.size) + " bytes; this reader knows the " +
                   std::to_string(pf::kSignatureTrailerSize) +
                   "-byte trailer only, and a signature must leave no byte unchecked (written by a newer Kiln?)");
  ProgramSignature sig;
  sig.algorithm = t.algorithm;
  sig.public_key = t.public_key;
  sig.signature = t.signature;
  signature = sig;
  return Error::Ok;
}

Error ProgramFile::Impl::open_data_files(const fb::Program& root, const std::string& program_dir,
                                         const std::vector<std::string>& data_paths, bool have_dir) {
  if (root.external_files()) {
    std::set<std::string> seen;
    for (flatbuffers::uoffset_t i = 0; i < root.external_files()->size(); ++i) {
      const std::string name = str(root.external_files()->Get(i));
      const std::string where = "external_files[" + std::to_string(i) + "]";
      // Names are basenames resolved next to the program: a separator or a
      // dot-dot would let a crafted program reach files elsewhere.
      if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
          name.find('\0') != std::string::npos)
        return invalid(where + " = " + quoted(name) + " is not a plain file name");
      if (!seen.insert(name).second) return invalid(where + " = " + quoted(name) + " is listed twice");
      external_file_names.push_back(name);
    }
  }
  if (!data_paths.empty() && data_paths.size() != external_file_names.size())
    return fail(Error::InvalidArgument, std::to_string(data_paths.size()) +
                                            " data files were given but the program names " +
                                            std::to_string(external_file_names.size()));
  for (size_t i = 0; i < external_file_names.size(); ++i) {
    std::string path;
    if (!data_paths.empty()) path = data_paths[i];
    else if (have_dir) path = program_dir + external_file_names[i];
    else
      return fail(Error::NotFound, "needs external data file " + quoted(external_file_names[i]) +
                                       ", which cannot be found for a program given as bytes");
    const std::string what = "external data file " + quoted(external_file_names[i]);
    auto opened = RegularFile::open(path, label + ": " + what + " at");
    if (!opened.ok()) return opened.error();
    DataFile file{path, ByteSource{}, {}};
    file.source.file.emplace(std::move(opened).value());
    file.source.label = label + ": " + what;
    const std::string at = what + " ('" + path + "')";
    const uint64_t size = file.source.size();
    KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> head,
                          file.source.read_vector(0, std::min<uint64_t>(size, pf::kDataHeaderSize)));
    const uint8_t* p = head.data();
    if (size < pf::kDataMagic.size() || std::memcmp(p, pf::kDataMagic.data(), pf::kDataMagic.size()) != 0)
      return invalid(at + ": bad magic at offset 0 (expected \"KILNDATA\")");
    if (size < pf::kDataHeaderSize)
      return invalid(at + ": truncated: " + std::to_string(size) + " bytes, shorter than the " +
                     std::to_string(pf::kDataHeaderSize) + "-byte header");
    const pf::DataHeader h = pf::decode_data_header(p);
    // No signature covers this header, so it must be exactly what the writer
    // of this program wrote: the program's own format version (which the
    // signed program header holds), this version's header size and data
    // base. A changed size moves the end of the data, which the entries'
    // ranges and the padding check catch.
    if (h.version != header.version)
      return invalid(at + ": format_version (offset " + std::to_string(pf::kDataOffVersion) + ") is " +
                     std::to_string(h.version) + " but the program's is " + std::to_string(header.version) +
                     " (a data file is written together with its program)");
    uint64_t end = 0;
    if (h.header_size != pf::kDataHeaderSize || h.data_base_offset != pf::kDataBaseOffset ||
        !pf::checked_add(h.data_base_offset, h.data_size, &end) || end != size)
      return invalid(at + ": header_size/data_base_offset/data_size (offsets " +
                     std::to_string(pf::kDataOffHeaderSize) + "/" + std::to_string(pf::kDataOffBase) + "/" +
                     std::to_string(pf::kDataOffSize) + ") = " + std::to_string(h.header_size) + "/" +
                     std::to_string(h.data_base_offset) + "/" + std::to_string(h.data_size) +
                     " do not describe the file (size " + std::to_string(size) + "; the header is " +
                     std::to_string(pf::kDataHeaderSize) + " bytes and the data starts at " +
                     std::to_string(pf::kDataBaseOffset) + ")");
    file.header = h;
    data_files.push_back(std::move(file));
  }
  return Error::Ok;
}

Error ProgramFile::Impl::decode_named_data(const fb::Program& root) {
  const auto* segments = root.segments();
  const size_t segment_count = segments ? segments->size() : 0;
  // The FlatBuffers Verifier checks a struct vector's length word but not that
  // its 8-byte elements are 8-aligned; reading misaligned ones would be UB.
  if (segments && reinterpret_cast<uintptr_t>(segments->Data()) % alignof(fb::Segment) != 0)
    return invalid("the segments vector is not 8-byte aligned in the FlatBuffer");
  // Segments: inside the segment region and pairwise disjoint. They start
  // after the FlatBuffer (checked with the header), so they cannot overlap it.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // (start, end) relative to the base, with index order
  std::vector<size_t> order(segment_count);
  for (size_t i = 0; i < segment_count; ++i) {
    const fb::Segment* s = segments->Get(static_cast<flatbuffers::uoffset_t>(i));
    uint64_t end = 0;
    if (!pf::checked_add(s->offset(), s->size(), &end) || end > header.segment_data_size)
      return invalid("segments[" + std::to_string(i) + "] (offset " + std::to_string(s->offset()) + ", size " +
                     std::to_string(s->size()) + ") lies outside the segment region of " +
                     std::to_string(header.segment_data_size) + " bytes at file offset " +
                     std::to_string(header.segment_base_offset));
    ranges.emplace_back(s->offset(), end);
    program_covered.push_back({header.segment_base_offset + s->offset(), header.segment_base_offset + end});
    order[i] = i;
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a] < ranges[b]; });
  for (size_t k = 1; k < order.size(); ++k) {
    const auto& prev = ranges[order[k - 1]];
    const auto& cur = ranges[order[k]];
    if (cur.first < prev.second && cur.first != cur.second && prev.first != prev.second)
      return invalid("segments[" + std::to_string(order[k - 1]) + "] (segment offsets " + std::to_string(prev.first) +
                     ".." + std::to_string(prev.second) + ") and segments[" + std::to_string(order[k]) + "] (" +
                     std::to_string(cur.first) + ".." + std::to_string(cur.second) + ") overlap");
  }

  std::vector<bool> referenced(segment_count, false);
  // Per external file: (start, end, entry index) to reject partial overlaps.
  std::vector<std::vector<std::tuple<uint64_t, uint64_t, size_t>>> external_ranges(data_files.size());
  const auto* list = root.named_data();
  const size_t count = list ? list->size() : 0;
  entries = std::make_unique<EntryState[]>(count);
  for (size_t i = 0; i < count; ++i) {
    const fb::NamedData* nd = list->Get(static_cast<flatbuffers::uoffset_t>(i));
    const std::string key = str(nd->key());
    const std::string where = "named_data[" + std::to_string(i) + "] " + quoted(key);
    if (key.empty()) return invalid("named_data[" + std::to_string(i) + "] has an empty key");
    if (named_index.count(key)) return invalid(where + ": duplicate key");
    if (nd->sha256()->size() != 32)
      return invalid(where + ": sha256 holds " + std::to_string(nd->sha256()->size()) + " bytes, not 32");
    const uint64_t alignment = nd->alignment();
    if (!pf::is_power_of_two(alignment) || alignment > pf::kMaxAlignment)
      return invalid(where + ": alignment " + std::to_string(alignment) + " is not a power of two <= " +
                     std::to_string(pf::kMaxAlignment));
    NamedDataInfo info;
    info.key = key;
    info.size = nd->size();
    info.alignment = alignment;
    std::memcpy(info.sha256.data(), nd->sha256()->data(), 32);
    EntryState& state = entries[named_data.size()];
    const bool in_file = nd->segment() >= 0;
    const bool external = nd->external_file() >= 0;
    if (in_file == external)
      return invalid(where + ": must name exactly one of a segment (" + std::to_string(nd->segment()) +
                     ") or an external file (" + std::to_string(nd->external_file()) + ")");
    if (in_file) {
      const auto index = static_cast<size_t>(nd->segment());
      if (index >= segment_count)
        return invalid(where + ": segment " + std::to_string(index) + " does not exist (the program has " +
                       std::to_string(segment_count) + " segments)");
      const fb::Segment* s = segments->Get(static_cast<flatbuffers::uoffset_t>(index));
      if (nd->offset() != 0) return invalid(where + ": offset must be 0 for data inside the program file");
      if (nd->size() != s->size())
        return invalid(where + ": size " + std::to_string(nd->size()) + " does not match segments[" +
                       std::to_string(index) + "] size " + std::to_string(s->size()));
      const uint64_t file_offset = header.segment_base_offset + s->offset();  // bounded by the file size
      if (file_offset % alignment != 0)
        return invalid(where + ": segments[" + std::to_string(index) + "] at file offset " +
                       std::to_string(file_offset) + " is not aligned to " + std::to_string(alignment));
      referenced[index] = true;
      state.file = -1;
      state.offset = file_offset;
      info.file_offset = file_offset;
    } else {
      const auto index = static_cast<size_t>(nd->external_file());
      if (index >= data_files.size())
        return invalid(where + ": external file " + std::to_string(index) + " does not exist (the program names " +
                       std::to_string(data_files.size()) + ")");
      const DataFile& file = data_files[index];
      uint64_t end = 0;
      if (!pf::checked_add(nd->offset(), nd->size(), &end) || end > file.header.data_size)
        return invalid(where + ": offset " + std::to_string(nd->offset()) + " + size " + std::to_string(nd->size()) +
                       " lies outside the data region (" + std::to_string(file.header.data_size) +
                       " bytes) of external data file " + quoted(external_file_names[index]));
      const uint64_t file_offset = file.header.data_base_offset + nd->offset();
      if (file_offset % alignment != 0)
        return invalid(where + ": external data file " + quoted(external_file_names[index]) + " offset " +
                       std::to_string(file_offset) + " is not aligned to " + std::to_string(alignment));
      external_ranges[index].emplace_back(nd->offset(), end, i);
      info.external_file = static_cast<int32_t>(index);
      info.file_offset = file_offset;
      state.file = static_cast<int32_t>(index);
      state.offset = file_offset;
    }
    named_index.emplace(key, named_data.size());
    named_data.push_back(std::move(info));
  }
  for (size_t i = 0; i < segment_count; ++i)
    if (!referenced[i])
      // Its bytes would be covered by no digest, hence by no signature.
      return invalid("segments[" + std::to_string(i) + "] is not referenced by any named data entry");
  data_covered.resize(data_files.size());
  for (size_t f = 0; f < external_ranges.size(); ++f) {
    auto& r = external_ranges[f];
    std::sort(r.begin(), r.end());
    for (size_t k = 1; k < r.size(); ++k) {
      const auto& [ps, pe, pi] = r[k - 1];
      const auto& [cs, ce, ci] = r[k];
      const bool same = ps == cs && pe == ce;  // two keys sharing one blob
      if (!same && cs < pe && cs != ce && ps != pe)
        return invalid("named_data[" + std::to_string(pi) + "] and named_data[" + std::to_string(ci) +
                       "] overlap in external data file " + quoted(external_file_names[f]));
    }
    const uint64_t base = data_files[f].header.data_base_offset;
    for (const auto& [start, end, index] : r) data_covered[f].push_back({base + start, base + end});
  }
  return Error::Ok;
}

Error ProgramFile::Impl::check_zero(const ByteSource& source, uint64_t begin, uint64_t end,
                                    const std::string& where) const {
  std::vector<uint8_t> chunk;
  for (uint64_t at = begin; at < end;) {
    const uint64_t n = std::min<uint64_t>(end - at, 64 * 1024);
    chunk.resize(static_cast<size_t>(n));
    KILN_RETURN_IF_ERROR(source.read(at, chunk));
    for (size_t i = 0; i < chunk.size(); ++i)
      if (chunk[i] != 0)
        return set_error(Error::InvalidProgram,
                         source.label + ": byte " + std::to_string(at + i) + " is 0x" + to_hex({&chunk[i], 1}) +
                             " but lies in " + where + " (bytes " + std::to_string(begin) + ".." +
                             std::to_string(end) + "), which the writer fills with zeros and no digest covers: "
                             "the file was modified or corrupted");
    at += n;
  }
  return Error::Ok;
}

// Every byte outside the header, the FlatBuffer, the segments, the external
// entries and the trailer is padding the writer zero-fills. Nothing else
// checks those bytes (no digest covers them), so they are checked here: a
// signed program then has no byte that can change unnoticed.
Error ProgramFile::Impl::check_gaps(const ByteSource& source, std::vector<Covered> covered, uint64_t end) const {
  std::sort(covered.begin(), covered.end(), [](const Covered& a, const Covered& b) { return a.begin < b.begin; });
  // A writer pads only up to the next alignment (at most 4096 bytes), so a
  // larger gap is refused unread: a crafted sparse file could otherwise keep
  // open() reading zeros for as long as its declared size allows.
  auto check = [&](uint64_t from, uint64_t to, const char* where) -> Error {
    if (to - from >= pf::kMaxAlignment)
      return set_error(Error::InvalidProgram,
                       source.label + ": bytes " + std::to_string(from) + ".." + std::to_string(to) + " (" + where +
                           ") are covered by nothing and longer than any padding a Kiln writer leaves (" +
                           std::to_string(pf::kMaxAlignment) + " bytes)");
    return check_zero(source, from, to, where);
  };
  uint64_t at = 0;
  for (const Covered& c : covered) {
    if (c.begin > at) KILN_RETURN_IF_ERROR(check(at, c.begin, "padding between covered ranges"));
    at = std::max(at, c.end);
  }
  if (end > at) KILN_RETURN_IF_ERROR(check(at, end, "padding after the last covered range"));
  return Error::Ok;
}

Error ProgramFile::Impl::check_program_padding(const ByteSource& source) const {
  std::vector<Covered> covered = program_covered;
  covered.push_back({0, header.header_size});
  covered.push_back({header.flatbuffer_offset, header.flatbuffer_offset + header.flatbuffer_size});
  covered.push_back({content_size, source.size()});  // the trailer, checked on its own
  return check_gaps(source, std::move(covered), source.size());
}

Error ProgramFile::Impl::check_padding() const {
  KILN_RETURN_IF_ERROR(check_program_padding(program));
  for (size_t f = 0; f < data_files.size(); ++f) {
    std::vector<Covered> data = data_covered[f];
    data.push_back({0, pf::kDataHeaderSize});
    KILN_RETURN_IF_ERROR(check_gaps(data_files[f].source, std::move(data), data_files[f].source.size()));
  }
  return Error::Ok;
}

Error ProgramFile::Impl::decode_key_values(const flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>* list,
                                           const std::string& where, std::map<std::string, std::string>* out) const {
  if (!list) return Error::Ok;
  for (flatbuffers::uoffset_t i = 0; i < list->size(); ++i) {
    const fb::KeyValue* kv = list->Get(i);
    const std::string key = str(kv->key());
    if (key.empty()) return invalid(where + "[" + std::to_string(i) + "] has an empty key");
    if (!out->emplace(key, str(kv->value())).second)
      return invalid(where + "[" + std::to_string(i) + "]: duplicate key " + quoted(key));
  }
  return Error::Ok;
}

Error ProgramFile::Impl::decode_tensors(const flatbuffers::Vector<flatbuffers::Offset<fb::TensorSpec>>* list,
                                        const std::string& where, std::vector<TensorSpec>* out) const {
  if (!list) return Error::Ok;
  for (flatbuffers::uoffset_t i = 0; i < list->size(); ++i) {
    const fb::TensorSpec* t = list->Get(i);
    const std::string at = where + "[" + std::to_string(i) + "] " + quoted(str(t->name()));
    if (!is_known_dtype(t->dtype())) return invalid(at + ": unknown dtype code " + std::to_string(t->dtype()));
    TensorSpec spec;
    spec.name = str(t->name());
    spec.dtype = static_cast<DType>(t->dtype());
    if (t->dims()) {
      for (flatbuffers::uoffset_t d = 0; d < t->dims()->size(); ++d) {
        const fb::Dim* dim = t->dims()->Get(d);
        const std::string dat = at + " dim " + std::to_string(d);
        if (dim->size() < 0) return invalid(dat + ": negative size " + std::to_string(dim->size()));
        if (dim->dynamic() && (dim->min() < 0 || (dim->max() != -1 && dim->max() < dim->min())))
          return invalid(dat + ": bounds [" + std::to_string(dim->min()) + ", " + std::to_string(dim->max()) +
                         "] are not a valid range");
        spec.dims.push_back(DimSpec{dim->size(), dim->dynamic(), dim->min(), dim->max(), str(dim->name())});
      }
    }
    // The runtime lays inputs out by this order (and indexes strides with
    // it), so anything but a permutation of the dims is refused here.
    if (const auto* order = t->dim_order(); order && order->size() > 0) {
      std::string listed;
      for (uint8_t d : *order) listed += (listed.empty() ? "" : ", ") + std::to_string(d);
      if (order->size() != spec.dims.size())
        return invalid(at + ": dim_order [" + listed + "] has " + std::to_string(order->size()) +
                       " entries but the tensor has rank " + std::to_string(spec.dims.size()));
      std::vector<bool> seen(spec.dims.size(), false);
      for (uint8_t d : *order) {
        if (d >= spec.dims.size() || seen[d])
          return invalid(at + ": dim_order [" + listed + "] is not a permutation of [0, " +
                         std::to_string(spec.dims.size()) + ")");
        seen[d] = true;
      }
      spec.dim_order.assign(order->begin(), order->end());
    }
    out->push_back(std::move(spec));
  }
  return Error::Ok;
}

Error ProgramFile::Impl::decode_methods(const fb::Program& root) {
  if (!root.methods()) return Error::Ok;
  for (flatbuffers::uoffset_t i = 0; i < root.methods()->size(); ++i) {
    const fb::Method* m = root.methods()->Get(i);
    MethodInfo info;
    info.name = str(m->name());
    const std::string where = "methods[" + std::to_string(i) + "] " + quoted(info.name);
    if (info.name.empty()) return invalid("methods[" + std::to_string(i) + "] has an empty name");
    if (method_index.count(info.name)) return invalid(where + ": duplicate method name");
    info.backend = str(m->backend());
    info.device = str(m->device());
    if (info.backend.empty()) return invalid(where + ": empty backend");
    if (info.device.empty()) return invalid(where + ": empty device");
    KILN_RETURN_IF_ERROR(decode_tensors(m->inputs(), where + " inputs", &info.inputs));
    KILN_RETURN_IF_ERROR(decode_tensors(m->outputs(), where + " outputs", &info.outputs));
    KILN_RETURN_IF_ERROR(decode_key_values(m->compile_specs(), where + " compile_specs", &info.compile_specs));
    KILN_RETURN_IF_ERROR(decode_key_values(m->metadata(), where + " metadata", &info.metadata));
    info.library_key = str(m->library_key());
    info.weights_key = str(m->weights_key());
    if (!info.library_key.empty() && !named_index.count(info.library_key))
      return invalid(where + ": library_key " + quoted(info.library_key) + " names no named data entry");
    if (!info.weights_key.empty() && !named_index.count(info.weights_key))
      return invalid(where + ": weights_key " + quoted(info.weights_key) + " names no named data entry");
    method_index.emplace(info.name, methods.size());
    methods.push_back(std::move(info));
  }
  return Error::Ok;
}

Error ProgramFile::Impl::parse(const std::string& program_dir, const std::vector<std::string>& data_paths,
                               bool have_dir) {
  KILN_RETURN_IF_ERROR(check_header());
  version = header.version;
  const uint8_t* fb_bytes = flatbuffer->data();
  const auto fb_size = static_cast<size_t>(flatbuffer->size());
  // Depth/table limits bound the verifier's work on adversarial input.
  flatbuffers::Verifier verifier(fb_bytes, fb_size, /*max_depth=*/16, /*max_tables=*/1u << 20);
  if (!fb::VerifyProgramBuffer(verifier))
    return invalid("the FlatBuffer at file offset " + std::to_string(header.flatbuffer_offset) + " (" +
                   std::to_string(fb_size) +
                   " bytes) fails verification: corrupt, truncated, missing a required field, or not a "
                   "Kiln program (identifier \"KLNP\")");
  const fb::Program& root = *fb::GetProgram(fb_bytes);
  KILN_RETURN_IF_ERROR(decode_key_values(root.metadata(), "metadata", &metadata));
  KILN_RETURN_IF_ERROR(open_data_files(root, program_dir, data_paths, have_dir));
  KILN_RETURN_IF_ERROR(decode_named_data(root));
  KILN_RETURN_IF_ERROR(decode_methods(root));
  KILN_RETURN_IF_ERROR(check_padding());
  return Error::Ok;
}

Result<NamedBytes> ProgramFile::Impl::read_entry(size_t index, bool verify) const {
  const NamedDataInfo& info = named_data[index];
  EntryState& state = entries[index];
  verify = verify || digests_required.load(std::memory_order_acquire);
  // One lock per entry: reading and hashing a large weights blob blocks only
  // callers of that same entry, who would otherwise read it again.
  std::lock_guard<std::mutex> lock(state.mutex);
  std::shared_ptr<const void> owner = state.live.lock();
  std::span<const uint8_t> bytes = state.live_bytes;
  bool verified = owner && state.live_verified;
  const auto mismatch = [&](const Sha256Digest& digest) {
    return fail(Error::IntegrityError,
                "SHA-256 of named data " + quoted(info.key) + " (" + std::to_string(info.size) + " bytes) is " +
                    to_hex(digest) + " but the program records " + to_hex(info.sha256) +
                    (info.external_file >= 0
                         ? " (in external data file " + quoted(external_file_names[info.external_file]) + ")"
                         : std::string()));
  };
  if (!owner) {
    const ByteSource& source = source_of(state.file);
    if (source.memory) {
      // A program given as bytes is a private copy already: entries are views of it.
      owner = source.memory;
      bytes = {source.memory->data() + state.offset, static_cast<size_t>(info.size)};
    } else {
      KILN_ASSIGN_OR_RETURN(PrivateBuffer buffer, PrivateBuffer::allocate(info.size, label + ": " + quoted(info.key)));
      Sha256 hasher;
      const ChunkReader read_entry_bytes = [&source, base = state.offset](uint64_t offset, std::span<uint8_t> out) {
        return source.read(base + offset, out);
      };
      // The digest is of this private copy, computed as it is read.
      const Error read = read_hashed(read_entry_bytes, {buffer.mutable_data(), static_cast<size_t>(info.size)},
                                     verify ? &hasher : nullptr);
      if (read != Error::Ok)
        return fail(Error::IoError, "reading named data " + quoted(info.key) + ": " + last_error_message());
      if (verify) {
        const Sha256Digest digest = hasher.finish();
        if (digest != info.sha256) return mismatch(digest);
        verified = true;
      }
      auto shared = std::make_shared<const PrivateBuffer>(std::move(buffer));
      bytes = shared->bytes();
      owner = std::move(shared);
    }
  }
  if (verify && !verified) {
    const Sha256Digest digest = sha256(bytes);
    if (digest != info.sha256) return mismatch(digest);
    verified = true;
  }
  state.live = owner;
  state.live_bytes = bytes;
  state.live_verified = verified;
  return NamedBytes(std::move(owner), bytes);
}

ProgramFile::ProgramFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProgramFile::~ProgramFile() = default;

Result<std::shared_ptr<const ProgramFile>> ProgramFile::open(const std::string& path,
                                                             const std::vector<std::string>& data_files) {
  auto impl = std::make_unique<Impl>();
  impl->label = "program file '" + path + "'";
  auto opened = RegularFile::open(path, "program file");
  if (!opened.ok()) return opened.error();
  impl->program.file.emplace(std::move(opened).value());
  impl->program.label = impl->label;
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  KILN_RETURN_IF_ERROR(impl->parse(dir, data_files, /*have_dir=*/true));
  return std::shared_ptr<const ProgramFile>(new ProgramFile(std::move(impl)));
}

Result<std::shared_ptr<const ProgramFile>> ProgramFile::from_bytes(std::span<const uint8_t> bytes) {
  auto impl = std::make_unique<Impl>();
  impl->label = "program bytes";
  KILN_ASSIGN_OR_RETURN(PrivateBuffer copy, PrivateBuffer::copy_of(bytes, impl->label));
  impl->program.memory = std::make_shared<const PrivateBuffer>(std::move(copy));
  impl->program.label = impl->label;
  KILN_RETURN_IF_ERROR(impl->parse({}, {}, /*have_dir=*/false));
  return std::shared_ptr<const ProgramFile>(new ProgramFile(std::move(impl)));
}

uint32_t ProgramFile::format_version() const noexcept { return impl_->version; }
const std::vector<MethodInfo>& ProgramFile::methods() const noexcept { return impl_->methods; }

const MethodInfo* ProgramFile::find_method(std::string_view name) const noexcept {
  auto it = impl_->method_index.find(name);
  return it == impl_->method_index.end() ? nullptr : &impl_->methods[it->second];
}

const std::map<std::string, std::string>& ProgramFile::metadata() const noexcept { return impl_->metadata; }
const std::vector<NamedDataInfo>& ProgramFile::named_data() const noexcept { return impl_->named_data; }
const std::vector<std::string>& ProgramFile::external_file_names() const noexcept {
  return impl_->external_file_names;
}
uint64_t ProgramFile::file_size() const noexcept { return impl_->program.size(); }

const ProgramSignature* ProgramFile::signature() const noexcept {
  return impl_->signature ? &*impl_->signature : nullptr;
}
std::span<const uint8_t> ProgramFile::header_bytes() const noexcept { return impl_->header_copy; }

Result<NamedBytes> ProgramFile::read_named_data(std::string_view key, bool verify_digest) const {
  auto it = impl_->named_index.find(key);
  if (it == impl_->named_index.end())
    return impl_->fail(Error::NotFound, "no named data entry " + quoted(key));
  return impl_->read_entry(it->second, verify_digest);
}

Error ProgramFile::read_named_range(std::string_view key, uint64_t offset, std::span<uint8_t> out) const {
  auto it = impl_->named_index.find(key);
  if (it == impl_->named_index.end()) return impl_->fail(Error::NotFound, "no named data entry " + quoted(key));
  const NamedDataInfo& info = impl_->named_data[it->second];
  if (impl_->digests_required.load(std::memory_order_acquire))
    return impl_->fail(Error::IntegrityError, "named data " + quoted(key) +
                                                  " may only be read with its digest checked (a signature "
                                                  "policy accepted this program)");
  if (offset > info.size || out.size() > info.size - offset)
    return impl_->fail(Error::InvalidArgument, "bytes " + std::to_string(offset) + ".." +
                                                   std::to_string(offset + out.size()) + " lie outside named data " +
                                                   quoted(key) + " (" + std::to_string(info.size) + " bytes)");
  const EntryState& state = impl_->entries[it->second];
  return impl_->source_of(state.file).read(state.offset + offset, out);
}

void ProgramFile::require_digests() const noexcept {
  impl_->digests_required.store(true, std::memory_order_release);
}

bool ProgramFile::digests_required() const noexcept {
  return impl_->digests_required.load(std::memory_order_acquire);
}

Result<NamedBytes> ProgramFile::read_content() const {
  const Impl& impl = *impl_;
  KILN_ASSIGN_OR_RETURN(PrivateBuffer copy, PrivateBuffer::allocate(impl.content_size, impl.label));
  KILN_RETURN_IF_ERROR(impl.program.read(0, {copy.mutable_data(), static_cast<size_t>(copy.size())}));
  const auto changed = [&](const std::string& what) {
    return impl.fail(Error::IntegrityError, what + " changed since the program was opened");
  };
  if (std::memcmp(copy.data(), impl.header_copy.data(), impl.header_copy.size()) != 0) return changed("the header");
  if (std::memcmp(copy.data() + impl.header.flatbuffer_offset, impl.flatbuffer->data(), impl.flatbuffer->size()) != 0)
    return changed("the FlatBuffer");
  for (size_t i = 0; i < impl.named_data.size(); ++i) {
    const EntryState& state = impl.entries[i];
    if (state.file >= 0) continue;
    const NamedDataInfo& info = impl.named_data[i];
    const Sha256Digest digest = sha256({copy.data() + state.offset, static_cast<size_t>(info.size)});
    if (digest != info.sha256)
      return impl.fail(Error::IntegrityError, "SHA-256 of named data " + quoted(info.key) + " (" +
                                                  std::to_string(info.size) + " bytes) is " + to_hex(digest) +
                                                  " but the program records " + to_hex(info.sha256));
  }
  auto shared = std::make_shared<const PrivateBuffer>(std::move(copy));
  // The padding of this copy, too: it is what the signer writes out.
  const ByteSource copy_source{std::nullopt, shared, impl.label};
  KILN_RETURN_IF_ERROR(impl.check_program_padding(copy_source));
  const std::span<const uint8_t> bytes = shared->bytes();
  return NamedBytes(std::move(shared), bytes);
}

}  // namespace kiln
