#include "program/program_writer.h"

#include <algorithm>
#include <optional>
#include <set>

#include "kiln_program_generated.h"
#include "program/atomic_file.h"
#include "program/file_format.h"
#include "program/sha256.h"

namespace kiln {

namespace pf = program_format;

namespace {

std::string basename_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Pads `out` with zeros up to a multiple of `alignment` (relative to `origin`).
void pad_to(std::vector<uint8_t>* out, uint64_t origin, uint64_t alignment) {
  const uint64_t rel = out->size() - origin;
  out->resize(origin + pf::align_up(rel, alignment), 0);
}

}  // namespace

Error ProgramWriter::add_method(const MethodInfo& method) {
  if (method.name.empty()) return set_error(Error::InvalidArgument, "ProgramWriter: method name is empty");
  for (const auto& m : methods_)
    if (m.name == method.name)
      return set_error(Error::InvalidArgument, "ProgramWriter: method '" + method.name + "' added twice");
  for (const auto* list : {&method.inputs, &method.outputs})
    for (const auto& t : *list)
      if (!is_known_dtype(static_cast<int32_t>(t.dtype)))
        return set_error(Error::InvalidArgument,
                         "ProgramWriter: method '" + method.name + "' tensor '" + t.name + "' has an unknown dtype");
  methods_.push_back(method);
  return Error::Ok;
}

Error ProgramWriter::add_named_data(const std::string& key, std::span<const uint8_t> bytes, uint64_t alignment,
                                    bool external) {
  if (key.empty()) return set_error(Error::InvalidArgument, "ProgramWriter: named data key is empty");
  if (!pf::is_power_of_two(alignment) || alignment > pf::kMaxAlignment)
    return set_error(Error::InvalidArgument, "ProgramWriter: alignment " + std::to_string(alignment) + " of '" + key +
                                                 "' is not a power of two <= 4096");
  for (auto& e : entries_) {
    if (e.key != key) continue;
    if (e.external != external || e.bytes.size() != bytes.size() ||
        !std::equal(bytes.begin(), bytes.end(), e.bytes.begin()))
      return set_error(Error::InvalidArgument, "ProgramWriter: named data '" + key + "' added twice with different contents");
    e.alignment = std::max(e.alignment, alignment);
    return Error::Ok;
  }
  entries_.push_back(Entry{key, std::vector<uint8_t>(bytes.begin(), bytes.end()), alignment, external});
  return Error::Ok;
}

void ProgramWriter::set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

Error ProgramWriter::build(const std::string& external_name, std::vector<uint8_t>* program,
                           std::vector<uint8_t>* data) const {
  std::set<std::string> keys, weights;
  for (const auto& e : entries_) keys.insert(e.key);
  for (const auto& m : methods_) {
    for (const std::string* k : {&m.library_key, &m.weights_key})
      if (!k->empty() && !keys.count(*k))
        return set_error(Error::InvalidArgument,
                         "ProgramWriter: method '" + m.name + "' names key '" + *k + "', which was not added");
    if (!m.weights_key.empty()) weights.insert(m.weights_key);
  }

  flatbuffers::FlatBufferBuilder fbb;
  auto key_values = [&](const std::map<std::string, std::string>& kv) {
    std::vector<flatbuffers::Offset<fb::KeyValue>> out;
    for (const auto& [k, v] : kv) out.push_back(fb::CreateKeyValueDirect(fbb, k.c_str(), v.c_str()));
    return fbb.CreateVector(out);
  };
  auto tensors = [&](const std::vector<TensorSpec>& list) {
    std::vector<flatbuffers::Offset<fb::TensorSpec>> out;
    for (const auto& t : list) {
      std::vector<flatbuffers::Offset<fb::Dim>> dims;
      for (const auto& d : t.dims)
        dims.push_back(fb::CreateDimDirect(fbb, d.size, d.dynamic, d.min, d.max, d.name.c_str()));
      // Row-major (empty) is written as no vector at all, as the Python writer does.
      out.push_back(fb::CreateTensorSpecDirect(fbb, t.name.c_str(), static_cast<int32_t>(t.dtype), &dims,
                                               t.dim_order.empty() ? nullptr : &t.dim_order));
    }
    return fbb.CreateVector(out);
  };

  // Lay out segments (in-file) and external data, each entry on its alignment.
  std::vector<fb::Segment> segments;
  std::vector<uint8_t> segment_bytes;
  data->clear();
  uint64_t max_alignment = pf::kDefaultAlignment;
  std::vector<flatbuffers::Offset<fb::NamedData>> named;
  for (const auto& e : entries_) {
    const uint64_t alignment = weights.count(e.key) ? std::max(e.alignment, pf::kWeightsAlignment) : e.alignment;
    const Sha256Digest digest = sha256(e.bytes);
    int32_t segment = -1, external_file = -1;
    uint64_t offset = 0;
    if (e.external) {
      pad_to(data, 0, alignment);  // the data base is page aligned, so relative alignment is absolute alignment
      offset = data->size();
      data->insert(data->end(), e.bytes.begin(), e.bytes.end());
      external_file = 0;
    } else {
      pad_to(&segment_bytes, 0, alignment);
      segments.emplace_back(segment_bytes.size(), e.bytes.size());
      segment_bytes.insert(segment_bytes.end(), e.bytes.begin(), e.bytes.end());
      segment = static_cast<int32_t>(segments.size() - 1);
      max_alignment = std::max(max_alignment, alignment);
    }
    std::vector<uint8_t> digest_bytes(digest.begin(), digest.end());
    named.push_back(fb::CreateNamedDataDirect(fbb, e.key.c_str(), segment, external_file, offset, e.bytes.size(),
                                              alignment, &digest_bytes));
  }
  const bool has_external = std::any_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.external; });
  if (has_external && external_name.empty())
    return set_error(Error::InvalidArgument, "ProgramWriter: external data needs a data file name");

  std::vector<flatbuffers::Offset<fb::Method>> methods;
  for (const auto& m : methods_) {
    auto name = fbb.CreateString(m.name);
    auto backend = fbb.CreateString(m.backend);
    auto device = fbb.CreateString(m.device);
    auto inputs = tensors(m.inputs);
    auto outputs = tensors(m.outputs);
    auto specs = key_values(m.compile_specs);
    auto meta = key_values(m.metadata);
    auto library = fbb.CreateString(m.library_key);
    auto weights_key = fbb.CreateString(m.weights_key);
    methods.push_back(fb::CreateMethod(fbb, name, backend, device, inputs, outputs, specs, meta, library, weights_key));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> external_files;
  if (has_external) external_files.push_back(fbb.CreateString(external_name));
  auto root = fb::CreateProgram(fbb, fbb.CreateVector(methods), fbb.CreateVector(named),
                                fbb.CreateVectorOfStructs(segments), key_values(metadata_),
                                fbb.CreateVector(external_files));
  fb::FinishProgramBuffer(fbb, root);

  pf::ProgramHeader header;
  header.version = kProgramVersion;
  header.header_size = pf::kProgramHeaderSize;
  header.flatbuffer_offset = pf::kProgramHeaderSize;  // 80: a multiple of 8
  header.flatbuffer_size = fbb.GetSize();
  header.segment_base_offset = pf::align_up(header.flatbuffer_offset + header.flatbuffer_size, max_alignment);
  header.segment_data_size = segment_bytes.size();
  header.flatbuffer_sha256 = sha256({fbb.GetBufferPointer(), fbb.GetSize()});
  const auto encoded = pf::encode_program_header(header);
  program->assign(encoded.begin(), encoded.end());
  program->insert(program->end(), fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  program->resize(header.segment_base_offset, 0);
  program->insert(program->end(), segment_bytes.begin(), segment_bytes.end());

  if (has_external) {
    pf::DataHeader dh;
    dh.version = kProgramVersion;
    dh.header_size = pf::kDataHeaderSize;
    dh.data_base_offset = pf::kDataBaseOffset;
    dh.data_size = data->size();
    const auto encoded_data = pf::encode_data_header(dh);
    std::vector<uint8_t> file(encoded_data.begin(), encoded_data.end());
    file.resize(pf::kDataBaseOffset, 0);
    file.insert(file.end(), data->begin(), data->end());
    data->swap(file);
  }
  return Error::Ok;
}

Error ProgramWriter::write(const std::string& path, const std::string& external_path) const {
  const std::string data_path = external_path.empty() ? path + ".data" : external_path;
  std::vector<uint8_t> program, data;
  KILN_RETURN_IF_ERROR(build(basename_of(data_path), &program, &data));
  // Both files are written and synced under temporary names before either is
  // renamed, so a failed write leaves the old pair as it was; the data file is
  // renamed first, so the new program never names data that is not there yet.
  std::optional<AtomicFile> data_file;
  if (!data.empty()) {
    KILN_ASSIGN_OR_RETURN(data_file, AtomicFile::create(data_path));
    KILN_RETURN_IF_ERROR(data_file->write(data));
    KILN_RETURN_IF_ERROR(data_file->sync());
  }
  KILN_ASSIGN_OR_RETURN(AtomicFile program_file, AtomicFile::create(path));
  KILN_RETURN_IF_ERROR(program_file.write(program));
  KILN_RETURN_IF_ERROR(program_file.sync());
  if (data_file) KILN_RETURN_IF_ERROR(data_file->commit());
  return program_file.commit();
}

Result<std::vector<uint8_t>> ProgramWriter::to_bytes() const {
  std::vector<uint8_t> program, data;
  KILN_RETURN_IF_ERROR(build("", &program, &data));
  return program;
}

}  // namespace kiln
