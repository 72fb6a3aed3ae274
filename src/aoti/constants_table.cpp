#include "aoti/constants_table.h"

#include <charconv>

#include "aoti/split.h"
#include "kiln/tensor.h"

namespace kiln::aoti {
namespace {

template <typename T>
bool parse_number(std::string_view s, T* out) {
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool parse_list(std::string_view s, std::vector<int64_t>* out) {
  out->clear();
  if (s.empty()) return true;
  for (std::string_view part : split(s, ',')) {
    int64_t v = 0;
    if (!parse_number(part, &v)) return false;
    out->push_back(v);
  }
  return true;
}

}  // namespace

Result<std::vector<ConstantEntry>> parse_constants_table(std::string_view text, uint64_t blob_size) {
  std::vector<ConstantEntry> entries;
  size_t line_no = 0;
  for (std::string_view line : split(text, '\n')) {
    ++line_no;
    auto bad = [&](const std::string& why) {
      return set_error(Error::InvalidProgram,
                       "weights table (metadata 'aoti_constants') line " + std::to_string(line_no) + ": " + why);
    };
    const std::vector<std::string_view> f = split(line, '\t');
    if (f.size() != 10) return bad("expected 10 tab-separated fields, found " + std::to_string(f.size()));
    ConstantEntry e;
    e.name = f[0];
    e.original_fqn = f[1];
    const auto dtype = dtype_from_name(f[2]);
    if (!dtype) return bad("unknown dtype '" + std::string(f[2]) + "'");
    e.dtype = *dtype;
    e.type = f[3];
    if (e.name.empty()) return bad("empty constant name");
    if (!parse_number(f[4], &e.storage_offset) || e.storage_offset < 0) return bad("bad storage offset");
    if (!parse_number(f[5], &e.data_size)) return bad("bad data size");
    if (!parse_number(f[6], &e.blob_offset)) return bad("bad blob offset");
    if (!parse_list(f[7], &e.sizes) || !parse_list(f[8], &e.strides) || e.sizes.size() != e.strides.size())
      return bad("bad shape or stride");
    e.sha256 = f[9];
    if (e.blob_offset > blob_size || e.data_size > blob_size - e.blob_offset)
      return bad("constant '" + e.name + "' lies outside the " + std::to_string(blob_size) + "-byte weights blob");
    auto extent = strided_extent_bytes(e.sizes, e.strides, e.dtype);
    if (!extent.ok()) return bad("constant '" + e.name + "': " + last_error_message());
    const uint64_t start = static_cast<uint64_t>(e.storage_offset) * element_size(e.dtype);
    if (*extent > 0 && (start > e.data_size || static_cast<uint64_t>(*extent) > e.data_size - start))
      return bad("constant '" + e.name + "' reaches past its " + std::to_string(e.data_size) + "-byte storage");
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace kiln::aoti
