// parse_constants_table: the exporter's weights table (metadata
// "aoti_constants") read back, and malformed or out-of-bounds tables refused
// with the line and the reason.
#include <gtest/gtest.h>

#include <string>

#include "aoti/constants_table.h"

namespace {

using kiln::Error;
using kiln::aoti::parse_constants_table;

// name, fqn, dtype, type, storage_offset, data_size, blob_offset, shape, stride, sha256
const std::string kWeight = "l_weight\tl.weight\tfloat32\tParameter\t0\t128\t0\t4,8\t8,1\tabc";
const std::string kBias = "l_bias\tl.bias\tbfloat16\tBuffer\t2\t64\t128\t4\t1\tdef";

TEST(ConstantsTable, ParsesEveryField) {
  auto entries = parse_constants_table(kWeight + "\n" + kBias, 192);
  ASSERT_TRUE(entries.ok()) << kiln::last_error_message();
  ASSERT_EQ(entries->size(), 2u);
  const auto& w = (*entries)[0];
  EXPECT_EQ(w.name, "l_weight");
  EXPECT_EQ(w.original_fqn, "l.weight");
  EXPECT_EQ(w.dtype, kiln::DType::Float32);
  EXPECT_TRUE(w.read_only());
  EXPECT_EQ(w.data_size, 128u);
  EXPECT_EQ(w.sizes, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(w.strides, (std::vector<int64_t>{8, 1}));
  const auto& b = (*entries)[1];
  EXPECT_EQ(b.dtype, kiln::DType::BFloat16);
  EXPECT_FALSE(b.read_only());
  EXPECT_EQ(b.storage_offset, 2);
  EXPECT_EQ(b.blob_offset, 128u);
}

void expect_refused(const std::string& table, uint64_t blob_size, const std::string& needle) {
  auto entries = parse_constants_table(table, blob_size);
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.error(), Error::InvalidProgram);
  EXPECT_NE(kiln::last_error_message().find(needle), std::string::npos) << kiln::last_error_message();
}

TEST(ConstantsTable, RefusesMalformedLines) {
  expect_refused("l_weight\tl.weight\tfloat32", 128, "line 1: expected 10 tab-separated fields");
  expect_refused(kWeight + "\n" + "x\tx\tfloat99\tParameter\t0\t4\t0\t1\t1\tz", 192, "line 2: unknown dtype");
  expect_refused("x\tx\tfloat32\tParameter\t-1\t4\t0\t1\t1\tz", 8, "bad storage offset");
  expect_refused("x\tx\tfloat32\tParameter\t0\t4\t0\t2,2\t1\tz", 8, "bad shape or stride");
}

TEST(ConstantsTable, RefusesEntriesOutsideTheBlobOrTheirStorage) {
  expect_refused(kWeight, 100, "lies outside the 100-byte weights blob");
  // float32 [4, 8] needs 128 bytes; 64 given.
  expect_refused("x\tx\tfloat32\tParameter\t0\t64\t0\t4,8\t8,1\tz", 128, "reaches past its 64-byte storage");
  // An offset view: 2 elements in, still inside 128 bytes? [4,8] from element 2 needs 136.
  expect_refused("x\tx\tfloat32\tParameter\t2\t128\t0\t4,8\t8,1\tz", 128, "reaches past");
}

}  // namespace
