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

// (input name, dimension) -> the size symbol run_impl binds it to.
using SizeSymbols = std::map<std::pair<std::string, int64_t>, std::string>;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The line of `text` that holds position `pos`, trimmed.
std::string_view line_at(std::string_view text, size_t pos) {
  const size_t begin = text.rfind('\n', pos);
  const size_t end = text.find('\n', pos);
  const size_t from = begin == std::string_view::npos ? 0 : begin + 1;
  return trim(text.substr(from, end == std::string_view::npos ? std::string_view::npos : end - from));
}

// The text between `open` and the matching ')' of the call starting at
// `open`, split at top-level commas.
std::vector<std::string_view> call_arguments(std::string_view line, size_t open) {
  std::vector<std::string_view> args;
  int depth = 0;
  size_t start = open + 1;
  for (size_t i = open; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '(' || c == '{') ++depth;
    if (c == ')' || c == '}') {
      if (--depth == 0) {
        args.push_back(trim(line.substr(start, i - start)));
        return args;
      }
    }
    if (c == ',' && depth == 1) {
      args.push_back(trim(line.substr(start, i - start)));
      start = i + 1;
    }
  }
  return {};  // unbalanced: not a call we understand
}

// run_impl's body: where outputs are produced and sizes bound to symbols.
std::string_view run_impl_body(std::string_view source) {
  const size_t start = source.find("AOTInductorModel::run_impl(");
  if (start == std::string_view::npos) return {};
  const size_t end = source.find("} // AOTInductorModel::run_impl", start);
  return source.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

SizeSymbols size_symbols(std::string_view body, const std::vector<std::string>& inputs) {
  SizeSymbols out;
  for (const std::string& input : inputs) {
    const std::string needle = " = " + input + "_size[";
    for (size_t pos = body.find(needle); pos != std::string_view::npos; pos = body.find(needle, pos + 1)) {
      const std::string_view line = line_at(body, pos);
      constexpr std::string_view kDecl = "int64_t ";
      if (line.substr(0, kDecl.size()) != kDecl) continue;
      const size_t eq = line.find(needle);
      const std::string_view symbol = trim(line.substr(kDecl.size(), eq - kDecl.size()));
      int64_t dim = 0;
      const std::string_view rest = line.substr(eq + needle.size());
      auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), dim);
      if (ec != std::errc() || symbol.empty() || symbol.find(' ') != std::string_view::npos) continue;
      out.emplace(std::make_pair(input, dim), std::string(symbol));
    }
  }
  return out;
}

// The layout (dim order, outermost first; empty: row-major) a dense tensor of
// `dims` has when its dimensions' strides are those the wrapper's stride checks
// expect (`strides`: dimension -> stride; Inductor checks only the strides that
// are integers at compile time, the others are expressions of dynamic sizes).
// Row-major whenever the checks agree with it. Static size-1 dimensions are
// ignored: no index multiplies their stride by anything but 0. InvalidProgram
// when no dense layout fits: the library was compiled for a slice or an
// expanded view, which Kiln cannot lay inputs out as.
Result<std::vector<uint8_t>> layout_from_stride_checks(const std::vector<DimSpec>& dims,
                                                       const std::map<int64_t, int64_t>& strides,
                                                       const std::string& where) {
  const auto rank = static_cast<int64_t>(dims.size());
  for (const DimSpec& d : dims)
    if (!d.dynamic && d.size == 0) return std::vector<uint8_t>{};  // always empty: reads nothing
  auto trivial = [&](int64_t d) { return !dims[d].dynamic && dims[d].size == 1; };

  // Row-major: a check on a dimension whose dense stride is an integer must
  // expect that integer; past a dynamic dimension the dense strides are
  // expressions, which a check (an integer) contradicts.
  // (Plain flags rather than std::optional: GCC 12 misreads those as
  // maybe-uninitialized here.)
  bool row_major = true;
  bool running_known = true;
  int64_t running = 1;
  for (int64_t d = rank; d-- > 0 && row_major;) {
    if (trivial(d)) continue;
    if (auto it = strides.find(d); it != strides.end()) row_major = running_known && running == it->second;
    running_known =
        running_known && !dims[d].dynamic && !__builtin_mul_overflow(running, dims[d].size, &running);
  }
  if (row_major) return std::vector<uint8_t>{};

  // Otherwise, innermost first: the next dimension is one whose check expects
  // the stride the dimensions inside it make (the highest index on a tie, as
  // row-major would order them). Past a dynamic dimension no check may remain;
  // the unchecked dimensions left go outside, in index order.
  std::vector<int64_t> inner_to_outer;
  std::set<int64_t> left;
  for (int64_t d = 0; d < rank; ++d)
    if (!trivial(d)) left.insert(d);
  bool expected_known = true;
  int64_t expected = 1;
  while (!left.empty() && expected_known) {
    int64_t next = -1;
    for (int64_t d : left)
      if (auto it = strides.find(d); it != strides.end() && it->second == expected) next = d;
    if (next < 0) break;
    inner_to_outer.push_back(next);
    left.erase(next);
    expected_known = !dims[next].dynamic && !__builtin_mul_overflow(expected, dims[next].size, &expected);
  }
  bool contradicted = expected_known && !left.empty();
  for (int64_t d : left) contradicted = contradicted || strides.count(d) != 0;
  if (contradicted || rank > 255) {
    std::string checks;
    for (const auto& [d, stride] : strides)
      checks += (checks.empty() ? "" : ", ") + std::to_string(d) + ": " + std::to_string(stride);
    return set_error(
        Error::InvalidProgram,
        where + ": its stride checks (dim: stride " + checks +
            ") fit no dense layout of its sizes, so "
            "the library was compiled for a slice or an expanded view, which Kiln cannot lay inputs out "
            "as; export it again with a dense example input (e.g. x.contiguous())");
  }
  for (auto it = left.rbegin(); it != left.rend(); ++it) inner_to_outer.push_back(*it);
  std::vector<uint8_t> order;
  for (int64_t d = 0; d < rank; ++d)
    if (trivial(d)) order.push_back(static_cast<uint8_t>(d));
  for (auto it = inner_to_outer.rbegin(); it != inner_to_outer.rend(); ++it)
    order.push_back(static_cast<uint8_t>(*it));
  bool identity = true;
  for (size_t k = 0; k < order.size(); ++k) identity = identity && order[k] == k;
  if (identity) order.clear();
  return order;
}

Result<TensorSpec> read_input(std::string_view source, size_t index, const std::string& name, const SizeSymbols& symbols,
                              std::string_view label) {
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
  std::map<int64_t, int64_t> strides;  // dimension -> the stride its check expects
  for_each_check(body, "unmatched stride value at ", [&](int64_t dim, std::string_view text) {
    note(dim);
    if (auto v = integer_after(text, "expected: ")) strides[dim] = *v;
  });
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
      auto symbol = symbols.find({name, i});
      d.name = symbol != symbols.end() ? symbol->second : name + "_dim" + std::to_string(i);
    }
    spec.dims.push_back(d);
  }
  KILN_ASSIGN_OR_RETURN(spec.dim_order, layout_from_stride_checks(spec.dims, strides, where));
  return spec;
}

// Infers output specs from run_impl (see the header for the forms understood).
class OutputInference {
 public:
  OutputInference(std::string_view body, const std::vector<TensorSpec>& inputs, const SizeSymbols& symbols)
      : body_(body) {
    for (const TensorSpec& input : inputs)
      for (size_t d = 0; d < input.dims.size(); ++d)
        if (auto it = symbols.find({input.name, static_cast<int64_t>(d)}); it != symbols.end())
          symbol_dims_.emplace(it->second, input.dims[d]);
  }

  std::optional<TensorSpec> output(size_t index, int depth = 0) const {
    if (depth > 8) return std::nullopt;
    const std::string needle = "output_handles[" + std::to_string(index) + "] = ";
    const size_t pos = body_.find(needle);
    if (pos == std::string_view::npos) return std::nullopt;
    const std::string_view line = line_at(body_, pos);
    const std::string_view value = line.substr(line.find(needle) + needle.size());
    constexpr std::string_view kOther = "output_handles[";
    if (value.substr(0, kOther.size()) == kOther) {  // the same tensor as an earlier output
      size_t other = 0;
      auto [p, ec] = std::from_chars(value.data() + kOther.size(), value.data() + value.size(), other);
      if (ec != std::errc() || other >= index) return std::nullopt;
      return output(other, depth + 1);
    }
    constexpr std::string_view kRelease = ".release();";
    if (value.size() <= kRelease.size() || value.substr(value.size() - kRelease.size()) != kRelease) return std::nullopt;
    return buffer(std::string(value.substr(0, value.size() - kRelease.size())), depth + 1);
  }

 private:
  std::optional<TensorSpec> buffer(const std::string& name, int depth) const {
    if (depth > 32 || name.empty()) return std::nullopt;
    // auto <name> = std::move(<other>);  // reuse
    const std::string alias = "auto " + name + " = std::move(";
    if (size_t pos = body_.find(alias); pos != std::string_view::npos) {
      const std::string_view rest = body_.substr(pos + alias.size());
      return buffer(std::string(rest.substr(0, rest.find(')'))), depth + 1);
    }
    // aoti_torch_empty_strided(rank, sizes, strides, dtype, device, index, &<name>_handle)
    if (size_t pos = body_.find("&" + name + "_handle)"); pos != std::string_view::npos) {
      const std::string_view line = line_at(body_, pos);
      const size_t call = line.find("aoti_torch_empty_strided(");
      if (call == std::string_view::npos) return std::nullopt;
      const auto args = call_arguments(line, call + std::string_view("aoti_torch_empty_strided").size());
      if (args.size() != 7) return std::nullopt;
      constexpr std::string_view kDtype = "cached_torch_dtype_";
      if (args[3].substr(0, kDtype.size()) != kDtype) return std::nullopt;
      const auto dtype = dtype_from_name(args[3].substr(kDtype.size()));
      if (!dtype) return std::nullopt;
      return shaped(*dtype, args[0], args[1]);
    }
    // RAIIAtenTensorHandle <name> = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(<buf>, rank, sizes, ...));
    if (size_t pos = body_.find("RAIIAtenTensorHandle " + name + " = "); pos != std::string_view::npos) {
      const std::string_view line = line_at(body_, pos);
      const size_t call = line.find("reinterpret_tensor_wrapper(");
      if (call == std::string_view::npos) return std::nullopt;
      const auto args = call_arguments(line, call + std::string_view("reinterpret_tensor_wrapper").size());
      if (args.size() != 5) return std::nullopt;
      auto base = buffer(std::string(args[0]), depth + 1);
      if (!base) return std::nullopt;
      return shaped(base->dtype, args[1], args[2]);
    }
    return std::nullopt;
  }

  // A spec of `dtype` whose rank is the literal `rank_text` and whose sizes are
  // the elements of the int64_t array named `sizes_array`.
  std::optional<TensorSpec> shaped(DType dtype, std::string_view rank_text, std::string_view sizes_array) const {
    int64_t rank = 0;
    auto [p, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
    if (ec != std::errc() || p != rank_text.data() + rank_text.size() || rank < 0 || rank > 64) return std::nullopt;
    TensorSpec spec;
    spec.dtype = dtype;
    if (rank == 0) return spec;
    const std::string decl = "int64_t " + std::string(sizes_array) + "[] = {";
    const size_t pos = body_.find(decl);
    if (pos == std::string_view::npos) return std::nullopt;
    const std::string_view rest = body_.substr(pos + decl.size());
    const std::string_view list = rest.substr(0, rest.find('}'));
    size_t start = 0;
    while (start < list.size()) {
      size_t comma = list.find(',', start);
      if (comma == std::string_view::npos) comma = list.size();
      const std::string_view token = trim(list.substr(start, comma - start));
      start = comma + 1;
      if (token.empty()) continue;  // "{4L, }"
      spec.dims.push_back(dim_of(token));
    }
    if (static_cast<int64_t>(spec.dims.size()) != rank) return std::nullopt;
    return spec;
  }

  // "8L": static 8; "s31": an input's dynamic size (its bounds); anything else
  // ("2L*s31"): dynamic, unbounded, named by the expression.
  DimSpec dim_of(std::string_view token) const {
    DimSpec d;
    std::string_view digits = token;
    if (!digits.empty() && digits.back() == 'L') digits.remove_suffix(1);
    int64_t value = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec == std::errc() && p == digits.data() + digits.size() && !digits.empty()) {
      d.size = value;
      return d;
    }
    if (auto it = symbol_dims_.find(std::string(token)); it != symbol_dims_.end()) return it->second;
    d.dynamic = true;
    d.size = 1;
    d.name = std::string(token);
    return d;
  }

  std::string_view body_;
  std::map<std::string, DimSpec> symbol_dims_;
};

}  // namespace

Result<WrapperContract> read_wrapper_contract(std::string_view source, std::string_view label) {
  WrapperContract contract;
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> inputs, info_names(source, "inputs_info_", label));
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> outputs, info_names(source, "outputs_info_", label));
  const std::string_view body = run_impl_body(source);
  const SizeSymbols symbols = size_symbols(body, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(TensorSpec spec, read_input(source, i, inputs[i], symbols, label));
    contract.inputs.push_back(std::move(spec));
  }
  const OutputInference inference(body, contract.inputs, symbols);
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::optional<TensorSpec> spec = inference.output(i);
    contract.output_known.push_back(spec.has_value());
    TensorSpec out = spec ? std::move(*spec) : TensorSpec{};
    out.name = outputs[i];
    contract.outputs.push_back(std::move(out));
  }
  return contract;
}

}  // namespace kiln::aoti
