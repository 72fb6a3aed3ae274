// The layout helper behind "any input layout": dense strides for a dim order,
// whether a tensor already has them, and the names messages use.
#include "runtime/input_layout.h"

#include <gtest/gtest.h>

#include <vector>

namespace kiln {
namespace {

using Sizes = std::vector<int64_t>;
using Order = std::vector<uint8_t>;

TEST(InputLayout, DenseStridesFollowTheDimOrder) {
  EXPECT_EQ(dense_strides(Sizes{8, 6}, Order{}), (Sizes{6, 1}));
  EXPECT_EQ(dense_strides(Sizes{8, 6}, Order{0, 1}), (Sizes{6, 1}));
  EXPECT_EQ(dense_strides(Sizes{8, 6}, Order{1, 0}), (Sizes{1, 8}));
  // channels_last: torch.empty(2, 3, 4, 5, memory_format=torch.channels_last).stride()
  EXPECT_EQ(dense_strides(Sizes{2, 3, 4, 5}, Order{0, 2, 3, 1}), (Sizes{60, 1, 15, 3}));
  // channels_last_3d
  EXPECT_EQ(dense_strides(Sizes{2, 3, 4, 5, 6}, Order{0, 2, 3, 4, 1}), (Sizes{360, 1, 90, 18, 3}));
  // Sizes 0 and 1 count as 1, as torch computes them.
  EXPECT_EQ(dense_strides(Sizes{3, 0, 4}, Order{}), (Sizes{4, 4, 1}));
  EXPECT_EQ(dense_strides(Sizes{3, 1, 4}, Order{2, 1, 0}), (Sizes{1, 3, 3}));
  EXPECT_EQ(dense_strides(Sizes{}, Order{}), (Sizes{}));
}

TEST(InputLayout, DenseStridesSaturateWhereTheProductWouldOverflow) {
  // An empty tensor whose other sizes multiply past int64 (found by the
  // input-validation fuzzer): the strides address nothing, and computing
  // them must not overflow.
  const int64_t huge = int64_t{1} << 59;
  EXPECT_EQ(dense_strides(Sizes{0, 20, huge}, Order{}), (Sizes{INT64_MAX, huge, 1}));
  EXPECT_EQ(dense_strides(Sizes{20, 0, huge}, Order{}), (Sizes{huge, huge, 1}));
}

TEST(InputLayout, MatchesOnlyTheDenseStridesOfItsOrder) {
  const Sizes sizes{8, 6};
  EXPECT_TRUE(has_dense_layout(sizes, Sizes{6, 1}, Order{}));
  EXPECT_FALSE(has_dense_layout(sizes, Sizes{1, 8}, Order{}));  // transposed view
  EXPECT_TRUE(has_dense_layout(sizes, Sizes{1, 8}, Order{1, 0}));
  EXPECT_FALSE(has_dense_layout(sizes, Sizes{6, 1}, Order{1, 0}));
  EXPECT_FALSE(has_dense_layout(sizes, Sizes{12, 2}, Order{}));  // a[:, ::2]
  EXPECT_FALSE(has_dense_layout(sizes, Sizes{12, 1}, Order{}));  // a[:, :6] of 12 columns
  EXPECT_FALSE(has_dense_layout(sizes, Sizes{0, 1}, Order{}));   // broadcast rows
  EXPECT_FALSE(has_dense_layout(Sizes{1024, 16}, Sizes{0, 1}, Order{}));
  EXPECT_TRUE(has_dense_layout(Sizes{2, 3, 4, 5}, Sizes{60, 1, 15, 3}, Order{0, 2, 3, 1}));
  EXPECT_FALSE(has_dense_layout(Sizes{2, 3, 4, 5}, Sizes{60, 20, 5, 1}, Order{0, 2, 3, 1}));
}

TEST(InputLayout, SizeOneStridesAndEmptyTensorsNeverForceACopy) {
  // A size-1 dim is only ever indexed at 0: its stride addresses nothing.
  EXPECT_TRUE(has_dense_layout(Sizes{1, 6}, Sizes{999, 1}, Order{}));
  EXPECT_TRUE(has_dense_layout(Sizes{4, 1}, Sizes{1, 1}, Order{}));  // torch.randn(1, 4).t()
  EXPECT_TRUE(has_dense_layout(Sizes{4, 1, 3}, Sizes{3, 0, 1}, Order{}));
  // An empty tensor has no memory to read, whatever its strides.
  EXPECT_TRUE(has_dense_layout(Sizes{0, 6}, Sizes{1, 0}, Order{}));
  EXPECT_TRUE(has_dense_layout(Sizes{5, 0}, Sizes{7, 3}, Order{1, 0}));
  EXPECT_TRUE(has_dense_layout(Sizes{}, Sizes{}, Order{}));  // a scalar
}

TEST(InputLayout, MalformedGeometryNeverMatches) {
  EXPECT_FALSE(has_dense_layout(Sizes{2, 3}, Sizes{3}, Order{}));      // rank mismatch
  EXPECT_FALSE(has_dense_layout(Sizes{2, 3}, Sizes{3, 1}, Order{0}));  // order of the wrong rank
  // Strides whose products overflow cannot be dense.
  EXPECT_FALSE(has_dense_layout(Sizes{INT64_MAX, 4, 2}, Sizes{8, 2, 1}, Order{}));
}

TEST(InputLayout, Descriptions) {
  EXPECT_EQ(describe_dim_order(Order{}), "row-major");
  EXPECT_EQ(describe_dim_order(Order{0, 1, 2}), "row-major");
  EXPECT_EQ(describe_dim_order(Order{0, 2, 3, 1}), "channels_last (0, 2, 3, 1)");
  EXPECT_EQ(describe_dim_order(Order{0, 2, 3, 4, 1}), "channels_last_3d (0, 2, 3, 4, 1)");
  EXPECT_EQ(describe_dim_order(Order{1, 0}), "dim order (1, 0)");
  EXPECT_TRUE(is_row_major_order(Order{}));
  EXPECT_TRUE(is_row_major_order(Order{0, 1}));
  EXPECT_FALSE(is_row_major_order(Order{1, 0}));
  EXPECT_EQ(strides_text(Sizes{12, 1}), "[12, 1]");
  EXPECT_EQ(strides_text(Sizes{}), "[]");
}

}  // namespace
}  // namespace kiln
