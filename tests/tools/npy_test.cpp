// Tests of the .npy reader/writer (tools/npy.h).
//
// Reading is checked against images numpy itself wrote (npy_golden.h, made by
//   np.lib.format.write_array(buf, array, version=...)
// for the arrays named in each test), with expected values recomputed here.
// Writing is checked by the header layout the format specifies and by
// reading back; the CLI's Python tests additionally load written files with numpy.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "kiln/tensor.h"
#include "npy.h"
#include "npy_golden.h"

namespace kiln::tools {
namespace {

std::span<const uint8_t> bytes_of(const auto& array) { return std::span<const uint8_t>(array, sizeof(array)); }

std::vector<uint8_t> vec(std::span<const uint8_t> s) { return std::vector<uint8_t>(s.begin(), s.end()); }

using testing_util::TempDir;

void write_file(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Element (i, j) of a rank-2 tensor by its strides, whatever the layout.
template <typename T>
T at2(const Tensor& t, int64_t i, int64_t j) {
  return t.data<T>()[i * t.stride(0) + j * t.stride(1)];
}

TEST(NpyRead, Float32COrderFromNumpy) {
  TempDir dir;
  const std::string path = dir.file("a.npy");
  write_file(path, bytes_of(golden::kF32C));
  auto t = read_npy(path);
  ASSERT_TRUE(t.ok()) << last_error_message();
  EXPECT_EQ(t->dtype(), DType::Float32);
  EXPECT_EQ(t->sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(t->is_contiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data_ptr()) % 64, 0u);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(at2<float>(*t, i, j), 0.5f * static_cast<float>(i * 3 + j));
}

TEST(NpyRead, FortranOrderGivesColumnMajorStrides) {
  auto t = parse_npy(bytes_of(golden::kF64Fortran), "f.npy");
  ASSERT_TRUE(t.ok()) << last_error_message();
  EXPECT_EQ(t->dtype(), DType::Float64);
  EXPECT_EQ(t->sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{1, 2}));
  // numpy: np.arange(6).reshape(2, 3) + 1, stored column by column.
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(at2<double>(*t, i, j), static_cast<double>(i * 3 + j + 1));
  // The raw memory is column-major: 1, 4, 2, 5, 3, 6.
  const double expected_raw[] = {1, 4, 2, 5, 3, 6};
  for (int k = 0; k < 6; ++k) EXPECT_EQ(t->data<double>()[k], expected_raw[k]);
}

TEST(NpyRead, BigEndianIsSwapped) {
  auto t = parse_npy(bytes_of(golden::kI32BigEndian), "be.npy");
  ASSERT_TRUE(t.ok()) << last_error_message();
  EXPECT_EQ(t->dtype(), DType::Int32);
  ASSERT_EQ(t->sizes(), (std::vector<int64_t>{3}));
  EXPECT_EQ(t->data<int32_t>()[0], 1);
  EXPECT_EQ(t->data<int32_t>()[1], -2);
  EXPECT_EQ(t->data<int32_t>()[2], 70000);
}

TEST(NpyRead, BoolFloat16V2ScalarV3AndEmpty) {
  auto b = parse_npy(bytes_of(golden::kBool), "b.npy");
  ASSERT_TRUE(b.ok()) << last_error_message();
  EXPECT_EQ(b->dtype(), DType::Bool);
  EXPECT_EQ(b->data<uint8_t>()[0], 1);
  EXPECT_EQ(b->data<uint8_t>()[1], 0);
  EXPECT_EQ(b->data<uint8_t>()[2], 1);

  auto h = parse_npy(bytes_of(golden::kF16V2), "h.npy");
  ASSERT_TRUE(h.ok()) << last_error_message();
  EXPECT_EQ(h->dtype(), DType::Float16);
  // binary16 encodings of 1.5, -2.0, 65504.
  EXPECT_EQ(h->data<uint16_t>()[0], 0x3e00);
  EXPECT_EQ(h->data<uint16_t>()[1], 0xc000);
  EXPECT_EQ(h->data<uint16_t>()[2], 0x7bff);

  auto s = parse_npy(bytes_of(golden::kI64V3Scalar), "s.npy");
  ASSERT_TRUE(s.ok()) << last_error_message();
  EXPECT_EQ(s->dtype(), DType::Int64);
  EXPECT_EQ(s->dim(), 0);
  EXPECT_EQ(s->numel(), 1);
  EXPECT_EQ(s->data<int64_t>()[0], -7);

  auto e = parse_npy(bytes_of(golden::kU8Empty), "e.npy");
  ASSERT_TRUE(e.ok()) << last_error_message();
  EXPECT_EQ(e->dtype(), DType::UInt8);
  EXPECT_EQ(e->sizes(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(e->numel(), 0);
}

// Fills a tensor's bytes with a pattern that differs per byte position.
void fill_pattern(const Tensor& t) {
  auto* p = static_cast<uint8_t*>(t.data_ptr());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(i * 37 + 11);
  if (t.dtype() == DType::Bool)
    for (size_t i = 0; i < t.nbytes(); ++i) p[i] &= 1;
}

TEST(NpyWrite, RoundTripsEveryNumpyDtype) {
  TempDir dir;
  const DType dtypes[] = {DType::Float16, DType::Float32, DType::Float64, DType::Int8,   DType::Int16,
                          DType::Int32,   DType::Int64,   DType::UInt8,   DType::UInt16, DType::UInt32,
                          DType::UInt64,  DType::Bool};
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3}, {2, 0, 3}, {3, 1, 4, 2}};
  for (DType dtype : dtypes) {
    for (const auto& shape : shapes) {
      auto t = Tensor::empty(shape, dtype);
      ASSERT_TRUE(t.ok());
      fill_pattern(*t);
      const std::string path = dir.file(std::string(dtype_name(dtype)) + ".npy");
      ASSERT_EQ(write_npy(path, *t), Error::Ok) << last_error_message();
      auto back = read_npy(path);
      ASSERT_TRUE(back.ok()) << dtype_name(dtype) << ": " << last_error_message();
      EXPECT_EQ(back->dtype(), dtype);
      EXPECT_EQ(back->sizes(), shape);
      EXPECT_TRUE(back->is_contiguous());
      ASSERT_EQ(back->nbytes(), t->nbytes());
      if (t->nbytes() > 0) {
        EXPECT_EQ(std::memcmp(back->data_ptr(), t->data_ptr(), t->nbytes()), 0) << dtype_name(dtype);
      }
    }
  }
}

TEST(NpyWrite, HeaderFollowsTheFormat) {
  auto t = Tensor::empty(std::vector<int64_t>{2, 3}, DType::Float32);
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 6; ++i) t->data<float>()[i] = static_cast<float>(i);
  auto image = encode_npy(*t);
  ASSERT_TRUE(image.ok()) << last_error_message();
  const auto& b = *image;
  ASSERT_GE(b.size(), 10u);
  EXPECT_EQ(std::memcmp(b.data(), "\x93NUMPY", 6), 0);
  EXPECT_EQ(b[6], 1);  // version 1.0
  EXPECT_EQ(b[7], 0);
  const size_t header_length = b[8] | (b[9] << 8);
  const size_t data_offset = 10 + header_length;
  EXPECT_EQ(data_offset % 64, 0u);
  ASSERT_EQ(b.size(), data_offset + 24);
  const std::string header(b.begin() + 10, b.begin() + static_cast<std::ptrdiff_t>(data_offset));
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u) << header;
  float values[6];
  std::memcpy(values, b.data() + data_offset, sizeof(values));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(values[i], static_cast<float>(i));

  // 1-d shapes keep Python's one-element tuple form; 0-d is ().
  auto v = Tensor::empty(std::vector<int64_t>{7}, DType::Int64);
  ASSERT_TRUE(v.ok());
  fill_pattern(*v);
  auto vimage = encode_npy(*v);
  ASSERT_TRUE(vimage.ok());
  EXPECT_NE(std::string(vimage->begin(), vimage->end()).find("'descr': '<i8', 'fortran_order': False, 'shape': (7,)"),
            std::string::npos);
  auto s = Tensor::empty(std::vector<int64_t>{}, DType::Bool);
  ASSERT_TRUE(s.ok());
  fill_pattern(*s);
  auto simage = encode_npy(*s);
  ASSERT_TRUE(simage.ok());
  EXPECT_NE(std::string(simage->begin(), simage->end()).find("'descr': '|b1', 'fortran_order': False, 'shape': ()"),
            std::string::npos);
}

TEST(NpyWrite, NonContiguousTensorIsWrittenInLogicalOrder) {
  // A transposed view of [[0,1,2],[3,4,5]]: logical [[0,3],[1,4],[2,5]].
  auto base = Tensor::empty(std::vector<int64_t>{2, 3}, DType::Int32);
  ASSERT_TRUE(base.ok());
  for (int i = 0; i < 6; ++i) base->data<int32_t>()[i] = i;
  auto transposed = base->make_view(std::vector<int64_t>{3, 2}, std::vector<int64_t>{1, 3}, 0);
  ASSERT_TRUE(transposed.ok());
  auto image = encode_npy(*transposed);
  ASSERT_TRUE(image.ok()) << last_error_message();
  auto back = parse_npy(*image, "t.npy");
  ASSERT_TRUE(back.ok()) << last_error_message();
  EXPECT_EQ(back->sizes(), (std::vector<int64_t>{3, 2}));
  const int32_t expected[] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back->data<int32_t>()[i], expected[i]);
}

TEST(NpyWrite, TypesNumpyLacksAreRefused) {
  auto t = Tensor::empty(std::vector<int64_t>{2}, DType::BFloat16);
  ASSERT_TRUE(t.ok());
  auto image = encode_npy(*t);
  EXPECT_EQ(image.error(), Error::NotSupported);
  EXPECT_NE(last_error_message().find("bfloat16"), std::string::npos);
  EXPECT_EQ(npy_descr(DType::Float8_e4m3fn), nullptr);
}

TEST(NpyWrite, UnwritablePathIsIoError) {
  auto t = Tensor::empty(std::vector<int64_t>{2}, DType::Float32);
  ASSERT_TRUE(t.ok());
  fill_pattern(*t);
  EXPECT_EQ(write_npy("/nonexistent-dir-kiln/x.npy", *t), Error::IoError);
  EXPECT_NE(last_error_message().find("/nonexistent-dir-kiln/x.npy"), std::string::npos);
}

// `kiln run --output-dir` rewrites out_*.npy in place: a reader that opened the
// old file keeps its bytes, and a failed write leaves no temporary file.
TEST(NpyWrite, RewritingAFileLeavesAnOpenReaderTheOldBytes) {
  const TempDir dir;
  const std::string path = dir.file("out_0_y.npy");
  auto first = Tensor::empty(std::vector<int64_t>{3}, DType::Float32);
  auto second = Tensor::empty(std::vector<int64_t>{5, 2}, DType::Int64);
  ASSERT_TRUE(first.ok() && second.ok());
  fill_pattern(*first);
  fill_pattern(*second);
  ASSERT_EQ(write_npy(path, *first), Error::Ok) << last_error_message();
  const auto old_image = encode_npy(*first);
  ASSERT_TRUE(old_image.ok());
  std::ifstream reader(path, std::ios::binary);  // opened before the rewrite
  ASSERT_TRUE(reader.good());

  ASSERT_EQ(write_npy(path, *second), Error::Ok) << last_error_message();
  const std::vector<uint8_t> seen{std::istreambuf_iterator<char>(reader), std::istreambuf_iterator<char>()};
  EXPECT_EQ(seen, *old_image);
  auto back = read_npy(path);
  ASSERT_TRUE(back.ok()) << last_error_message();
  EXPECT_EQ(back->sizes(), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(std::memcmp(back->data_ptr(), second->data_ptr(), second->nbytes()), 0);

  // A directory in the way: the rename fails, naming the path; nothing is left.
  const std::string blocked = dir.file("blocked.npy");
  std::filesystem::create_directory(blocked);
  EXPECT_EQ(write_npy(blocked, *first), Error::IoError);
  EXPECT_NE(last_error_message().find(blocked), std::string::npos) << last_error_message();
  size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) (void)entry, ++entries;
  EXPECT_EQ(entries, 2u);  // out_0_y.npy and blocked.npy
}

// Expects parsing `bytes` to fail with a message naming the source and containing `needle`.
void expect_bad(const std::vector<uint8_t>& bytes, const std::string& needle) {
  auto t = parse_npy(bytes, "bad.npy");
  ASSERT_FALSE(t.ok()) << "accepted an image that should fail with: " << needle;
  EXPECT_EQ(t.error(), Error::InvalidArgument);
  EXPECT_EQ(last_error_message().rfind("bad.npy: ", 0), 0u) << last_error_message();
  EXPECT_NE(last_error_message().find(needle), std::string::npos) << last_error_message();
}

// A version 1.0 image with the given header text (padded like numpy) and data.
std::vector<uint8_t> image_with_header(const std::string& dict, size_t data_bytes) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::vector<uint8_t> b(10 + header.size() + data_bytes, 0);
  const uint8_t preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(header.size() & 0xff),
                                static_cast<uint8_t>(header.size() >> 8)};
  std::memcpy(b.data(), preamble, sizeof(preamble));
  std::memcpy(b.data() + 10, header.data(), header.size());
  return b;
}

TEST(NpyRead, TruncatedFilesAreErrors) {
  const auto good = vec(bytes_of(golden::kF32C));
  expect_bad({}, "too short for the magic");
  expect_bad(std::vector<uint8_t>(good.begin(), good.begin() + 4), "too short for the magic");
  expect_bad(std::vector<uint8_t>(good.begin(), good.begin() + 7), "no format version");
  expect_bad(std::vector<uint8_t>(good.begin(), good.begin() + 9), "no header length");
  expect_bad(std::vector<uint8_t>(good.begin(), good.begin() + 40), "truncated header");
  // Header intact, data (24 bytes) cut short by 4.
  expect_bad(std::vector<uint8_t>(good.begin(), good.end() - 4), "truncated data");
  expect_bad(std::vector<uint8_t>(good.begin(), good.end() - 4), "24 bytes");
  auto longer = good;
  longer.push_back(0);
  expect_bad(longer, "1 unexpected bytes after the data");
}

TEST(NpyRead, BadHeadersAreErrors) {
  auto magic = vec(bytes_of(golden::kF32C));
  magic[1] = 'X';
  expect_bad(magic, "bad magic");
  auto version = vec(bytes_of(golden::kF32C));
  version[6] = 4;
  expect_bad(version, "unsupported .npy format version 4.0");

  expect_bad(image_with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16),
             "unsupported dtype '<c8' (complex");
  expect_bad(image_with_header("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16),
             "unsupported dtype descriptor '|O'");
  expect_bad(image_with_header("{'descr': '<U5', 'fortran_order': False, 'shape': (2,), }", 40),
             "only numeric arrays");
  expect_bad(image_with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8),
             "structured");
  expect_bad(image_with_header("{'descr': '<f4', 'fortran_order': False, }", 8), "missing key 'shape'");
  expect_bad(image_with_header("{'descr': '<f4', 'shape': (2,), }", 8), "missing key 'fortran_order'");
  expect_bad(image_with_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", 8),
             "not True or False");
  expect_bad(image_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8),
             "negative dimension");
  expect_bad(image_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 8),
             "not an integer");
  expect_bad(image_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", 8),
             "unexpected key 'extra'");
  expect_bad(image_with_header("{'descr': '<f4', 'fortran_order': False 'shape': (2,)}", 8), "malformed header");
  expect_bad(image_with_header("{'descr': '<f4", 8), "unterminated string");
  expect_bad(image_with_header("'descr': '<f4'", 8), "does not start with '{'");
  expect_bad(image_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 8),
             "overflows");
  expect_bad(image_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 8),
             "overflows int64");
  expect_bad(image_with_header("{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }", 8), "no byte order");
}

TEST(NpyRead, HandWrittenHeaderVariantsAreAccepted) {
  // Double quotes, no trailing comma, key order changed, Python 2 long suffix,
  // a misaligned data offset (not a multiple of 64).
  std::string dict = "{\"shape\": (3L,), \"fortran_order\": False, \"descr\": \"<i2\"}\n";
  const int16_t values[] = {-1, 2, 300};
  std::vector<uint8_t> b(10 + dict.size() + sizeof(values));
  const uint8_t preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(dict.size()), 0};
  std::memcpy(b.data(), preamble, sizeof(preamble));
  std::memcpy(b.data() + 10, dict.data(), dict.size());
  std::memcpy(b.data() + 10 + dict.size(), values, sizeof(values));
  auto t = parse_npy(b, "hand.npy");
  ASSERT_TRUE(t.ok()) << last_error_message();
  EXPECT_EQ(t->dtype(), DType::Int16);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data_ptr()) % 64, 0u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t->data<int16_t>()[i], values[i]);
}

TEST(NpyRead, MissingFileIsNotFoundAndADirectoryAnIoError) {
  auto missing = read_npy("/nonexistent-kiln/x.npy");
  EXPECT_EQ(missing.error(), Error::NotFound);
  EXPECT_NE(last_error_message().find("/nonexistent-kiln/x.npy"), std::string::npos);
  const TempDir tmp;
  auto dir = read_npy(tmp.path());
  EXPECT_EQ(dir.error(), Error::IoError);
  EXPECT_NE(last_error_message().find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace kiln::tools
