#include "npy.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>

#include "program/atomic_file.h"
#include "program/regular_file.h"
#include "tensor_util.h"

namespace kiln::tools {
namespace {

constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// numpy aligns the start of the data to 64 bytes; so do we, and we keep the
// loaded data at that alignment because compiled kernels may rely on it.
constexpr size_t kAlign = 64;

struct DescrEntry {
  char kind;
  int size;
  DType dtype;
};
constexpr DescrEntry kDescrs[] = {
    {'f', 2, DType::Float16}, {'f', 4, DType::Float32}, {'f', 8, DType::Float64},
    {'i', 1, DType::Int8},    {'i', 2, DType::Int16},   {'i', 4, DType::Int32},
    {'i', 8, DType::Int64},   {'u', 1, DType::UInt8},   {'u', 2, DType::UInt16},
    {'u', 4, DType::UInt32},  {'u', 8, DType::UInt64},  {'b', 1, DType::Bool},
};

struct Header {
  DType dtype = DType::Float32;
  bool byteswap = false;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  size_t data_offset = 0;
};

Error fail(const std::string& source, const std::string& what) {
  return set_error(Error::InvalidArgument, source + ": " + what);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) text += ",";
  return text + ")";
}

// Parses a numpy descriptor string such as "<f4" or "|b1".
Error parse_descr(const std::string& descr, const std::string& source, Header* header) {
  if (descr.size() < 3)
    return fail(source, "unsupported dtype descriptor '" + descr + "'");
  const char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=')
    return fail(source, "unsupported dtype descriptor '" + descr + "' (no byte-order mark)");
  const char kind = descr[1];
  int size = 0;
  for (size_t i = 2; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9' || size > 1000)
      return fail(source, "unsupported dtype descriptor '" + descr + "'");
    size = size * 10 + (descr[i] - '0');
  }
  for (const auto& entry : kDescrs) {
    if (entry.kind != kind || entry.size != size) continue;
    header->dtype = entry.dtype;
    // '|' means "byte order does not apply"; numpy only uses it for 1-byte
    // types, but a 1-byte type is the same in any order.
    if (size > 1 && order == '|')
      return fail(source, "dtype descriptor '" + descr + "' has no byte order for a multi-byte type");
    header->byteswap = size > 1 && order == '>';
    return Error::Ok;
  }
  std::string hint;
  if (kind == 'c') hint = " (complex numbers are not supported)";
  if (kind == 'V') hint = " (raw void data; bfloat16 arrays saved this way need converting to float32)";
  if (kind == 'U' || kind == 'S' || kind == 'O') hint = " (only numeric arrays are supported)";
  return fail(source, "unsupported dtype '" + descr + "'" + hint);
}

// A small parser for the Python dict literal numpy writes as the header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderDictParser {
 public:
  HeaderDictParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  Error parse(Header* header) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    if (!take('{')) return problem("header does not start with '{'");
    while (true) {
      skip_space();
      if (take('}')) break;
      std::string key;
      KILN_RETURN_IF_ERROR(parse_string(&key));
      skip_space();
      if (!take(':')) return problem("expected ':' after key '" + key + "'");
      skip_space();
      if (key == "descr") {
        if (have_descr) return problem("duplicate key 'descr'");
        have_descr = true;
        if (peek() == '[')
          return fail(source_, "structured (record) dtypes are not supported");
        std::string descr;
        KILN_RETURN_IF_ERROR(parse_string(&descr));
        KILN_RETURN_IF_ERROR(parse_descr(descr, source_, header));
      } else if (key == "fortran_order") {
        if (have_order) return problem("duplicate key 'fortran_order'");
        have_order = true;
        if (take_word("True")) {
          header->fortran_order = true;
        } else if (take_word("False")) {
          header->fortran_order = false;
        } else {
          return problem("'fortran_order' is not True or False");
        }
      } else if (key == "shape") {
        if (have_shape) return problem("duplicate key 'shape'");
        have_shape = true;
        KILN_RETURN_IF_ERROR(parse_shape(&header->shape));
      } else {
        return problem("unexpected key '" + key + "' (expected descr, fortran_order, shape)");
      }
      skip_space();
      if (take(',')) continue;
      skip_space();
      if (take('}')) break;
      return problem("expected ',' or '}' after the value of '" + key + "'");
    }
    skip_space();
    if (pos_ != text_.size()) return problem("unexpected text after the closing '}'");
    if (!have_descr) return problem("missing key 'descr'");
    if (!have_order) return problem("missing key 'fortran_order'");
    if (!have_shape) return problem("missing key 'shape'");
    return Error::Ok;
  }

 private:
  Error problem(const std::string& what) {
    return fail(source_, "malformed header at character " + std::to_string(pos_) + ": " + what);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool take(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  bool take_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r'))
      ++pos_;
  }
  Error parse_string(std::string* out) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') return problem("expected a quoted string");
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out->push_back(text_[pos_++]);
    }
    if (!take(quote)) return problem("unterminated string");
    return Error::Ok;
  }
  Error parse_shape(std::vector<int64_t>* shape) {
    if (!take('(')) return problem("'shape' is not a tuple");
    while (true) {
      skip_space();
      if (take(')')) return Error::Ok;
      if (peek() == '-') return problem("negative dimension in 'shape'");
      if (peek() < '0' || peek() > '9') return problem("'shape' holds something that is not an integer");
      int64_t value = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, peek() - '0', &value))
          return problem("dimension in 'shape' overflows int64");
        ++pos_;
      }
      take('L');  // Python 2 long literal, written by very old numpy
      shape->push_back(value);
      skip_space();
      if (take(',')) continue;
      skip_space();
      if (take(')')) return Error::Ok;
      return problem("expected ',' or ')' in 'shape'");
    }
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
};

uint32_t read_le(const uint8_t* p, int bytes) {
  uint32_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

Error parse_header(std::span<const uint8_t> bytes, const std::string& source, Header* header) {
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return fail(source, bytes.size() < sizeof(kMagic) ? "not a .npy file (too short for the magic bytes)"
                                                       : "not a .npy file (bad magic bytes)");
  if (bytes.size() < 8) return fail(source, "truncated header (no format version)");
  const int major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0)
    return fail(source, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                            " (supported: 1.0, 2.0, 3.0)");
  const int length_bytes = major == 1 ? 2 : 4;
  const size_t preamble = 8 + static_cast<size_t>(length_bytes);
  if (bytes.size() < preamble) return fail(source, "truncated header (no header length)");
  const size_t header_length = read_le(bytes.data() + 8, length_bytes);
  if (bytes.size() - preamble < header_length)
    return fail(source, "truncated header: it claims " + std::to_string(header_length) + " bytes but the file has " +
                            std::to_string(bytes.size() - preamble) + " after the preamble");
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + preamble), header_length);
  KILN_RETURN_IF_ERROR(HeaderDictParser(text, source).parse(header));
  header->data_offset = preamble + header_length;
  return Error::Ok;
}

struct FreeDeleter {
  void operator()(uint8_t* p) const noexcept { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t, FreeDeleter>;

Result<Buffer> allocate_aligned(size_t size, const std::string& source) {
  const size_t rounded = (size + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  if (!p) return set_error(Error::OutOfMemory, source + ": cannot allocate " + std::to_string(size) + " bytes");
  return Buffer(static_cast<uint8_t*>(p));
}

// Turns a buffer holding a whole .npy image into a tensor that owns it; the
// data is moved to the (aligned) start of the buffer when the header length
// left it misaligned.
Result<Tensor> adopt_image(Buffer buffer, size_t size, const std::string& source) {
  Header header;
  KILN_RETURN_IF_ERROR(parse_header(std::span<const uint8_t>(buffer.get(), size), source, &header));
  const size_t elem = element_size(header.dtype);
  int64_t count = 1;
  for (int64_t d : header.shape)
    if (__builtin_mul_overflow(count, d, &count))
      return fail(source, "shape " + shape_text(header.shape) + " overflows int64");
  int64_t expected = 0;
  if (__builtin_mul_overflow(count, static_cast<int64_t>(elem), &expected))
    return fail(source, "shape " + shape_text(header.shape) + " overflows int64 bytes");
  const size_t available = size - header.data_offset;
  const std::string what = std::string(dtype_name(header.dtype)) + " array of shape " + shape_text(header.shape);
  if (available < static_cast<uint64_t>(expected))
    return fail(source, "truncated data: the header describes a " + what + " (" + std::to_string(expected) +
                            " bytes) but only " + std::to_string(available) + " bytes follow the header");
  if (available > static_cast<uint64_t>(expected))
    return fail(source, std::to_string(available - static_cast<uint64_t>(expected)) +
                            " unexpected bytes after the data of the " + what);

  uint8_t* data = buffer.get();
  if (header.data_offset % kAlign != 0) {
    std::memmove(data, data + header.data_offset, static_cast<size_t>(expected));
  } else {
    data += header.data_offset;
  }
  if (header.byteswap) {
    for (int64_t i = 0; i < count; ++i) {
      uint8_t* e = data + static_cast<size_t>(i) * elem;
      for (size_t a = 0, b = elem - 1; a < b; ++a, --b) std::swap(e[a], e[b]);
    }
  }
  std::vector<int64_t> strides;
  if (header.fortran_order) {
    // Column-major: the first dimension varies fastest.
    strides.resize(header.shape.size());
    int64_t stride = 1;
    for (size_t i = 0; i < header.shape.size(); ++i) {
      strides[i] = stride;
      stride *= header.shape[i] > 1 ? header.shape[i] : 1;
    }
  } else {
    strides = contiguous_strides(header.shape);
  }
  uint8_t* base = buffer.get();
  auto tensor = Tensor::from_blob(data, header.shape, strides, header.dtype, Device{},
                                  [base](void*) { std::free(base); });
  if (!tensor.ok()) return fail(source, last_error_message());
  buffer.release();  // now owned by the tensor's storage
  return tensor;
}

}  // namespace

const char* npy_descr(DType dtype) noexcept {
  switch (dtype) {
    case DType::Float16: return "<f2";
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Int8: return "|i1";
    case DType::Int16: return "<i2";
    case DType::Int32: return "<i4";
    case DType::Int64: return "<i8";
    case DType::UInt8: return "|u1";
    case DType::UInt16: return "<u2";
    case DType::UInt32: return "<u4";
    case DType::UInt64: return "<u8";
    case DType::Bool: return "|b1";
    default: return nullptr;
  }
}

Result<Tensor> parse_npy(std::span<const uint8_t> bytes, const std::string& source) {
  KILN_ASSIGN_OR_RETURN(Buffer buffer, allocate_aligned(bytes.size(), source));
  if (!bytes.empty()) std::memcpy(buffer.get(), bytes.data(), bytes.size());
  return adopt_image(std::move(buffer), bytes.size(), source);
}

Result<Tensor> read_npy(const std::string& path) {
  // Opened without blocking and type-checked first: a FIFO or a device is
  // an error naming it, never a hang.
  KILN_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path, "input file"));
  const auto size = static_cast<size_t>(file.size());
  KILN_ASSIGN_OR_RETURN(Buffer buffer, allocate_aligned(size, path));
  KILN_RETURN_IF_ERROR(file.read_exact(0, {buffer.get(), size}));
  return adopt_image(std::move(buffer), size, path);
}

Result<std::vector<uint8_t>> encode_npy(const Tensor& tensor) {
  if (!tensor.defined()) return set_error(Error::InvalidArgument, "encode_npy: undefined tensor");
  const char* descr = npy_descr(tensor.dtype());
  if (!descr)
    return set_error(Error::NotSupported, std::string("numpy has no dtype for ") + dtype_name(tensor.dtype()) +
                                              "; convert it (e.g. to float32) before writing .npy");
  Tensor host = tensor;
  if (!tensor.device().is_cpu() || !tensor.is_contiguous()) {
    KILN_ASSIGN_OR_RETURN(host, contiguous_copy(tensor, Device{}));
  }

  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < host.sizes().size(); ++i) dict += std::to_string(host.sizes()[i]) + ", ";
  if (host.sizes().size() > 1) dict.resize(dict.size() - 2);  // 1-d keeps its "N," form
  else if (host.sizes().size() == 1) dict.resize(dict.size() - 1);
  dict += "), }";

  // Version 1.0 stores the header length in 16 bits; fall back to 2.0 only
  // when a very high-rank shape would not fit.
  int major = 1;
  size_t preamble = 10;
  size_t total = (preamble + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
  if (total - preamble > std::numeric_limits<uint16_t>::max()) {
    major = 2;
    preamble = 12;
    total = (preamble + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
  }
  const size_t header_length = total - preamble;
  dict.append(header_length - dict.size() - 1, ' ');
  dict.push_back('\n');

  std::vector<uint8_t> out;
  out.reserve(total + host.nbytes());
  out.insert(out.end(), kMagic, kMagic + sizeof(kMagic));
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  for (size_t i = 0; i < preamble - 8; ++i) out.push_back(static_cast<uint8_t>(header_length >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  const auto* data = static_cast<const uint8_t*>(host.data_ptr());
  if (host.nbytes() > 0) out.insert(out.end(), data, data + host.nbytes());
  return out;
}

Error write_npy(const std::string& path, const Tensor& tensor) {
  auto image = encode_npy(tensor);
  if (!image.ok()) return set_error(image.error(), path + ": " + last_error_message());
  return replace_file_atomically(path, {std::span<const uint8_t>(*image)});
}

}  // namespace kiln::tools
