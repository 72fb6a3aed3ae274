// Reader of the `.kiln` program file: maps it, validates every byte it will
// later trust, and decodes the FlatBuffer into plain C++ structs once so the
// runtime never touches unverified memory. See docs/program-format.md.
#include "kiln/program_file.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "kiln_program_generated.h"
#include "program/file_format.h"
#include "program/hex.h"
#include "program/mapped_file.h"
#include "program/sha256.h"
#include "program/zip_archive.h"
#include "program/signature.h"

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

enum class DigestState : uint8_t { Unchecked, Good, Bad };

struct DigestCache {
  std::mutex mutex;
  DigestState state = DigestState::Unchecked;
};

// One mapped external data file, after its header was validated.
struct DataFile {
  std::string path;
  MappedFile map;
  pf::DataHeader header;
};

}  // namespace

struct ProgramFile::Impl {
  std::string label;  // "program file '<path>'" or "program bytes", prefix of every message
  MappedFile program;
  std::vector<DataFile> data_files;
  uint32_t version = 0;
  std::vector<MethodInfo> methods;
  std::map<std::string, std::string> metadata;
  std::vector<NamedDataInfo> named_data;
  std::vector<std::string> external_file_names;
  std::vector<std::span<const uint8_t>> named_bytes;  // parallel to named_data
  std::map<std::string, size_t, std::less<>> named_index;
  std::map<std::string, size_t, std::less<>> method_index;
  std::unique_ptr<DigestCache[]> digests;  // parallel to named_data
  uint64_t header_size = 0;
  uint64_t content_size = 0;  // end of the last segment: where a signature trailer starts
  std::optional<ProgramSignature> signature;

  Error fail(Error code, const std::string& message) const { return set_error(code, label + ": " + message); }
  Error invalid(const std::string& message) const { return fail(Error::InvalidProgram, message); }

  Error parse(const std::string& program_dir, const std::vector<std::string>& data_paths, bool have_dir);
  Error check_header(pf::ProgramHeader* header);
  Error check_signature_trailer(uint64_t content_end);
  Error map_data_files(const fb::Program& root, const std::string& program_dir,
                       const std::vector<std::string>& data_paths, bool have_dir);
  Error decode_named_data(const fb::Program& root, const pf::ProgramHeader& header);
  Error decode_methods(const fb::Program& root);
  Error decode_key_values(const flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>* list,
                          const std::string& where, std::map<std::string, std::string>* out) const;
  Error decode_tensors(const flatbuffers::Vector<flatbuffers::Offset<fb::TensorSpec>>* list,
                       const std::string& where, std::vector<TensorSpec>* out) const;
};

Error ProgramFile::Impl::check_header(pf::ProgramHeader* header) {
  const uint64_t file_size = program.size();
  const uint8_t* p = program.data();
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
  const Sha256Digest digest = sha256({p + h.flatbuffer_offset, static_cast<size_t>(h.flatbuffer_size)});
  if (digest != h.flatbuffer_sha256)
    return fail(Error::IntegrityError, "SHA-256 of the FlatBuffer (bytes " + std::to_string(h.flatbuffer_offset) + ".." +
                                           std::to_string(fb_end) + ") is " + to_hex(digest) + " but the header (offset " +
                                           std::to_string(pf::kOffFlatbufferSha256) + ") records " +
                                           to_hex(h.flatbuffer_sha256));
  *header = h;
  header_size = h.header_size;
  content_size = seg_end;
  return Error::Ok;
}

// The only bytes allowed after the last segment are one well-formed signature
// trailer that ends the file exactly; anything else is corruption.
Error ProgramFile::Impl::check_signature_trailer(uint64_t content_end) {
  const uint64_t file_size = program.size();
  if (content_end == file_size) return Error::Ok;
  const std::span<const uint8_t> tail{program.data() + content_end, static_cast<size_t>(file_size - content_end)};
  const std::string where = " after the last segment (offset " + std::to_string(content_end) + ")";
  if (!pf::has_signature_magic(tail))
    return invalid("file size " + std::to_string(file_size) + " does not match the header, which says the segments end at " +
                   std::to_string(content_end) + " (" + std::to_string(tail.size()) + " trailing bytes" +
                   " that are not a signature trailer: no \"KILNSIG1\" magic)");
  if (tail.size() < pf::kSignatureTrailerSize)
    return invalid("signature trailer" + where + " is truncated: " + std::to_string(tail.size()) +
                   " bytes, shorter than the " + std::to_string(pf::kSignatureTrailerSize) + "-byte trailer");
  const pf::SignatureTrailer t = pf::decode_signature_trailer(tail.data());
  if (t.size != tail.size())
    return invalid("signature trailer" + where + " records its size as " + std::to_string(t.size) + " but " +
                   std::to_string(tail.size()) + " bytes follow the last segment (it must end the file exactly)");
  ProgramSignature sig;
  sig.algorithm = t.algorithm;
  sig.public_key = t.public_key;
  sig.signature = t.signature;
  signature = sig;
  return Error::Ok;
}

Error ProgramFile::Impl::map_data_files(const fb::Program& root, const std::string& program_dir,
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
    auto mapped = MappedFile::map(path, label + ": " + what + " at");
    if (!mapped.ok()) return mapped.error();
    DataFile file{path, std::move(mapped).value(), {}};
    const std::string at = what + " ('" + path + "')";
    const uint64_t size = file.map.size();
    const uint8_t* p = file.map.data();
    if (size < pf::kDataMagic.size() || std::memcmp(p, pf::kDataMagic.data(), pf::kDataMagic.size()) != 0)
      return invalid(at + ": bad magic at offset 0 (expected \"KILNDATA\")");
    if (size < pf::kDataHeaderSize)
      return invalid(at + ": truncated: " + std::to_string(size) + " bytes, shorter than the " +
                     std::to_string(pf::kDataHeaderSize) + "-byte header");
    const pf::DataHeader h = pf::decode_data_header(p);
    if (h.version < kMinProgramVersion || h.version > kProgramVersion)
      return invalid(at + ": format_version (offset " + std::to_string(pf::kDataOffVersion) + ") is " +
                     std::to_string(h.version) + "; this reader accepts " + std::to_string(kMinProgramVersion) + ".." +
                     std::to_string(kProgramVersion));
    uint64_t end = 0;
    if (h.header_size < pf::kDataHeaderSize || h.data_base_offset < h.header_size ||
        !pf::checked_add(h.data_base_offset, h.data_size, &end) || end != size)
      return invalid(at + ": header_size/data_base_offset/data_size (offsets " +
                     std::to_string(pf::kDataOffHeaderSize) + "/" + std::to_string(pf::kDataOffBase) + "/" +
                     std::to_string(pf::kDataOffSize) + ") = " + std::to_string(h.header_size) + "/" +
                     std::to_string(h.data_base_offset) + "/" + std::to_string(h.data_size) +
                     " do not describe the file (size " + std::to_string(size) + ")");
    file.header = h;
    data_files.push_back(std::move(file));
  }
  return Error::Ok;
}

Error ProgramFile::Impl::decode_named_data(const fb::Program& root, const pf::ProgramHeader& header) {
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
    std::span<const uint8_t> bytes;
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
      bytes = {program.data() + file_offset, static_cast<size_t>(s->size())};
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
      bytes = {file.map.data() + file_offset, static_cast<size_t>(nd->size())};
    }
    named_index.emplace(key, named_data.size());
    named_data.push_back(std::move(info));
    named_bytes.push_back(bytes);
  }
  for (size_t i = 0; i < segment_count; ++i)
    if (!referenced[i])
      // Its bytes would be covered by no digest, hence by no signature.
      return invalid("segments[" + std::to_string(i) + "] is not referenced by any named data entry");
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
  }
  digests = std::make_unique<DigestCache[]>(named_data.size());
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
  pf::ProgramHeader header;
  KILN_RETURN_IF_ERROR(check_header(&header));
  version = header.version;
  const uint8_t* fb_bytes = program.data() + header.flatbuffer_offset;
  const auto fb_size = static_cast<size_t>(header.flatbuffer_size);
  // Depth/table limits bound the verifier's work on adversarial input.
  flatbuffers::Verifier verifier(fb_bytes, fb_size, /*max_depth=*/16, /*max_tables=*/1u << 20);
  if (!fb::VerifyProgramBuffer(verifier))
    return invalid("the FlatBuffer at file offset " + std::to_string(header.flatbuffer_offset) + " (" +
                   std::to_string(fb_size) +
                   " bytes) fails verification: corrupt, truncated, missing a required field, or not a "
                   "Kiln program (identifier \"KLNP\")");
  const fb::Program& root = *fb::GetProgram(fb_bytes);
  KILN_RETURN_IF_ERROR(decode_key_values(root.metadata(), "metadata", &metadata));
  KILN_RETURN_IF_ERROR(map_data_files(root, program_dir, data_paths, have_dir));
  KILN_RETURN_IF_ERROR(decode_named_data(root, header));
  KILN_RETURN_IF_ERROR(decode_methods(root));
  return Error::Ok;
}

ProgramFile::ProgramFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProgramFile::~ProgramFile() = default;

Result<std::shared_ptr<const ProgramFile>> ProgramFile::open(const std::string& path,
                                                             const std::vector<std::string>& data_files) {
  auto impl = std::make_unique<Impl>();
  impl->label = "program file '" + path + "'";
  auto mapped = MappedFile::map(path, "program file");
  if (!mapped.ok()) return mapped.error();
  impl->program = std::move(mapped).value();
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  KILN_RETURN_IF_ERROR(impl->parse(dir, data_files, /*have_dir=*/true));
  return std::shared_ptr<const ProgramFile>(new ProgramFile(std::move(impl)));
}

Result<std::shared_ptr<const ProgramFile>> ProgramFile::from_bytes(std::span<const uint8_t> bytes) {
  auto impl = std::make_unique<Impl>();
  impl->label = "program bytes";
  auto copy = MappedFile::copy_of(bytes);
  if (!copy.ok()) return copy.error();
  impl->program = std::move(copy).value();
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
std::span<const uint8_t> ProgramFile::header_bytes() const noexcept {
  return {impl_->program.data(), static_cast<size_t>(impl_->header_size)};
}
std::span<const uint8_t> ProgramFile::content_bytes() const noexcept {
  return {impl_->program.data(), static_cast<size_t>(impl_->content_size)};
}

Result<std::span<const uint8_t>> ProgramFile::named_data_bytes(std::string_view key, bool verify_digest) const {
  auto it = impl_->named_index.find(key);
  if (it == impl_->named_index.end())
    return impl_->fail(Error::NotFound, "no named data entry " + quoted(key));
  const size_t index = it->second;
  const std::span<const uint8_t> bytes = impl_->named_bytes[index];
  if (!verify_digest) return bytes;
  const NamedDataInfo& info = impl_->named_data[index];
  DigestCache& cache = impl_->digests[index];
  // One lock per entry: hashing a large weights blob blocks only callers of
  // that same entry, who would otherwise hash it again.
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (cache.state == DigestState::Unchecked)
    cache.state = sha256(bytes) == info.sha256 ? DigestState::Good : DigestState::Bad;
  if (cache.state == DigestState::Bad)
    return impl_->fail(Error::IntegrityError,
                       "SHA-256 of named data " + quoted(key) + " (" + std::to_string(bytes.size()) +
                           " bytes) does not match the recorded " + to_hex(info.sha256) +
                           (info.external_file >= 0
                                ? " (in external data file " + quoted(impl_->external_file_names[info.external_file]) + ")"
                                : std::string()));
  return bytes;
}

}  // namespace kiln
