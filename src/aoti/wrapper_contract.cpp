#include "aoti/wrapper_contract.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace kiln::aoti {
namespace {

// `<array>_info_[<i>].name = "<name>";` for every i, in index order.
Result<std::vector<std::string>> info_names(std::string_view source, std::string_view array, std::string_view label) {
  std::map<size_t, std::string> names;
  const std::string prefix = std::string(array) + "[";
  for (size_t pos = source.find(prefix); pos != std::string_view::npos; pos = source.find(prefix, pos + 1)) {
    size_t index = 0;
    const char* begin = source.data() + pos + prefix.size();
    const char* end = source.data() + source.size();
    auto [p, ec] = std::from_chars(begin, end, index);
    if (ec != std::errc()) continue;
    const std::string_view rest(p, static_cast<size_t>(end - p));
    constexpr std::string_view kAssign = "].name = \"";
    if (rest.substr(0, kAssign.size()) != kAssign) continue;
    const size_t close = rest.find('"', kAssign.size());
    if (close == std::string_view::npos) continue;
    names[index] = std::string(rest.substr(kAssign.size(), close - kAssign.size()));
  }
  std::vector<std::string> out;
  for (const auto& [index, name] : names) {
    if (index != out.size())
      return set_error(Error::InvalidProgram, std::string(label) + ": the wrapper source names " +
                                                  std::string(array) + "[" + std::to_string(index) + "] but not [" +
                                                  std::to_string(out.size()) + "]");
    out.push_back(name);
  }
  return out;
}

// The integer that follows the first occurrence of `marker` in `text`.
std::optional<int64_t> integer_after(std::string_view text, std::string_view marker) {
  const size_t pos = text.find(marker);
  if (pos == std::string_view::npos) return std::nullopt;
  int64_t value = 0;
  const char* begin = text.data() + pos + marker.size();
  auto [p, ec] = std::from_chars(begin, text.data() + text.size(), value);
  if (ec != std::errc()) return std::nullopt;
  return value;
}

// For each occurrence of `check` ("unmatched dim value at "), calls
// `on(dim, statement)` with the dimension index and the text up to the next
// check, which holds the expected value.
template <typename F>
void for_each_check(std::string_view body, std::string_view check, F&& on) {
  for (size_t pos = body.find(check); pos != std::string_view::npos; pos = body.find(check, pos + 1)) {
    int64_t dim = 0;
    const char* begin = body.data() + pos + check.size();
    auto [p, ec] = std::from_chars(begin, body.data() + body.size(), dim);
    if (ec != std::errc() || dim < 0) continue;
    const size_t statement_end = body.find("throw", pos);
    on(dim, body.substr(pos, statement_end == std::string_view::npos ? std::string_view::npos : statement_end - pos));
  }
}

Result<TensorSpec> read_input(std::string_view source, size_t index, const std::string& name, std::string_view label) {
  const std::string where = std::string(label) + ": input " + std::to_string(index) + " ('" + name + "')";
  const std::string header = "static void check_input_" + std::to_string(index) + "(";
  const size_t start = source.find(header);
  if (start == std::string_view::npos)
    return set_error(Error::InvalidProgram,
                     where + ": the wrapper source has no " + header.substr(12) + ") input check, from which Kiln "
                     "reads the input's dtype and shape (a non-tensor input, or a torch version that does not "
                     "emit input checks)");
  size_t stop = source.find("static void check_input_", start + header.size());
  if (stop == std::string_view::npos) stop = source.find("__check_inputs_outputs", start);
  const std::string_view body = source.substr(start, stop == std::string_view::npos ? std::string_view::npos : stop - start);

  TensorSpec spec;
  spec.name = name;
  constexpr std::string_view kDtype = "_expected_dtype = aoti_torch_dtype_";
  const size_t dpos = body.find(kDtype);
  if (dpos == std::string_view::npos)
    return set_error(Error::InvalidProgram, where + ": its input check states no dtype");
  const size_t dbegin = dpos + kDtype.size();
  const size_t dend = body.find('(', dbegin);
  const std::string dtype_text(body.substr(dbegin, dend == std::string_view::npos ? 0 : dend - dbegin));
  const auto dtype = dtype_from_name(dtype_text);
  if (!dtype)
    return set_error(Error::NotSupported, where + " has dtype '" + dtype_text + "', which Kiln does not support");
  spec.dtype = *dtype;

  // Dimension -> what the checks say about it. A dimension without a size
  // check stays dynamic and unbounded.
  std::map<int64_t, DimSpec> dims;
  std::set<int64_t> static_dims;
  int64_t rank = 0;
  constexpr int64_t kMaxRank = 64;  // a larger index means the source is not what we think it is
  auto note = [&](int64_t dim) -> DimSpec& {
    rank = std::max(rank, std::min(dim, kMaxRank) + 1);
    return dims[dim];
  };
  for_each_check(body, "unmatched dim value at ", [&](int64_t dim, std::string_view text) {
    DimSpec& d = note(dim);
    if (auto v = integer_after(text, "expected: ")) d.size = *v, static_dims.insert(dim);
  });
  for_each_check(body, "dim value is too small at ", [&](int64_t dim, std::string_view text) {
    DimSpec& d = note(dim);
    if (auto v = integer_after(text, "expected it to be >= ")) d.min = std::max<int64_t>(0, *v);
  });
  for_each_check(body, "dim value is too large at ", [&](int64_t dim, std::string_view text) {
    DimSpec& d = note(dim);
    if (auto v = integer_after(text, "expected to be <= ")) d.max = *v;
  });
  for_each_check(body, "unmatched stride value at ", [&](int64_t dim, std::string_view) { note(dim); });
  if (rank > kMaxRank)
    return set_error(Error::InvalidProgram, where + ": its input check names a dimension >= " +
                                                std::to_string(kMaxRank));
  for (int64_t i = 0; i < rank; ++i) {
    DimSpec d;
    if (auto it = dims.find(i); it != dims.end()) d = it->second;
    // A dimension with no size check, or only bounds, is dynamic; its
    // "example size" (what `kiln run` uses for random inputs) is the smallest
    // size the bounds allow, but at least 1.
    if (!static_dims.count(i)) {
      d.dynamic = true;
      d.size = std::max<int64_t>(d.min, 1);
      if (d.max >= 0 && d.size > d.max) d.size = d.max;
      d.name = name + "_dim" + std::to_string(i);
    }
    spec.dims.push_back(d);
  }
  return spec;
}

}  // namespace

Result<WrapperContract> read_wrapper_contract(std::string_view source, std::string_view label) {
  WrapperContract contract;
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> inputs, info_names(source, "inputs_info_", label));
  KILN_ASSIGN_OR_RETURN(contract.output_names, info_names(source, "outputs_info_", label));
  for (size_t i = 0; i < inputs.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(TensorSpec spec, read_input(source, i, inputs[i], label));
    contract.inputs.push_back(std::move(spec));
  }
  return contract;
}

}  // namespace kiln::aoti
