#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {
namespace {

TEST(Tensor, EmptyIsContiguousAndAligned) {
  auto t = Tensor::empty(std::vector<int64_t>{2, 3, 4}, DType::Float32);
  ASSERT_TRUE(t.ok()) << last_error_message();
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t->numel(), 24);
  EXPECT_EQ(t->nbytes(), 96u);
  EXPECT_TRUE(t->is_contiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data_ptr()) % 64, 0u);
}

TEST(Tensor, ViewsShareStorageAndOffset) {
  auto base = Tensor::empty(std::vector<int64_t>{4, 4}, DType::Float32);
  ASSERT_TRUE(base.ok());
  float* p = base->data<float>();
  std::iota(p, p + 16, 0.0f);
  auto view = base->make_view(std::vector<int64_t>{2, 2}, std::vector<int64_t>{4, 1}, 5);
  ASSERT_TRUE(view.ok()) << last_error_message();
  EXPECT_EQ(view->storage().get(), base->storage().get());
  EXPECT_EQ(base->storage()->use_count(), 2);
  EXPECT_EQ(view->data<float>()[0], 5.0f);
  EXPECT_FALSE(view->is_contiguous());
}

TEST(Tensor, ViewPastStorageIsRejected) {
  auto base = Tensor::empty(std::vector<int64_t>{4}, DType::Float32);
  ASSERT_TRUE(base.ok());
  auto view = base->make_view(std::vector<int64_t>{4}, std::vector<int64_t>{1}, 1);
  EXPECT_EQ(view.error(), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("past its storage"), std::string::npos);
}

TEST(Tensor, BorrowedBlobIsNotFreedAndOwnedBlobIsFreedOnce) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  int freed = 0;
  {
    auto owned = Tensor::from_blob(data, std::vector<int64_t>{2, 3}, std::vector<int64_t>{3, 1}, DType::Float32,
                                   Device{}, [&](void*) { ++freed; });
    ASSERT_TRUE(owned.ok());
    Tensor copy = *owned;
    EXPECT_EQ(copy.data<float>()[4], 5.0f);
  }
  EXPECT_EQ(freed, 1);
}

TEST(Storage, OnlyConstantStoragesKeepDerivedData) {
  std::vector<float> bytes(4, 1.0f);
  StoragePtr s = Storage::create(bytes.data(), sizeof(float) * bytes.size(), Device{});
  int made = 0;
  auto make = [&]() -> std::shared_ptr<const void> {
    ++made;
    return std::make_shared<int>(42);
  };
  EXPECT_FALSE(s->is_constant());
  EXPECT_EQ(s->derived("packed", make), nullptr);
  EXPECT_EQ(made, 0);
  s->mark_constant();
  EXPECT_TRUE(s->is_constant());
  std::shared_ptr<const void> first = s->derived("packed", make);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(*static_cast<const int*>(first.get()), 42);
  EXPECT_EQ(s->derived("packed", make), first);  // kept: made once
  EXPECT_EQ(made, 1);
  EXPECT_NE(s->derived("other view", make), first);  // each key its own
  EXPECT_EQ(made, 2);
}

TEST(Storage, FailedDerivationIsRetried) {
  std::vector<float> bytes(4);
  StoragePtr s = Storage::create(bytes.data(), sizeof(float) * bytes.size(), Device{});
  s->mark_constant();
  EXPECT_EQ(s->derived("k", [] { return std::shared_ptr<const void>(); }), nullptr);
  EXPECT_NE(s->derived("k", [] { return std::shared_ptr<const void>(std::make_shared<int>(1)); }), nullptr);
}

TEST(Storage, DerivedDataGoesBeforeTheBytes) {
  // Derived data may point into the bytes: the storage drops it before its deleter runs.
  std::vector<std::string> order;
  auto* data = new float[4];
  {
    StoragePtr s = Storage::create(data, 16, Device{}, [&order](void* p) {
      order.push_back("bytes");
      delete[] static_cast<float*>(p);
    });
    s->mark_constant();
    s->derived("k", [&order] {
      return std::shared_ptr<const void>(new int(0), [&order](const void* p) {
        order.push_back("derived");
        delete static_cast<const int*>(p);
      });
    });
  }
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], "derived");
  EXPECT_EQ(order[1], "bytes");
}

TEST(Tensor, StridedCopyTransposes) {
  auto src = Tensor::empty(std::vector<int64_t>{2, 3}, DType::Float32);
  ASSERT_TRUE(src.ok());
  std::iota(src->data<float>(), src->data<float>() + 6, 0.0f);
  auto transposed = src->make_view(std::vector<int64_t>{3, 2}, std::vector<int64_t>{1, 3}, 0);
  ASSERT_TRUE(transposed.ok());
  auto dst = Tensor::empty(std::vector<int64_t>{3, 2}, DType::Float32);
  ASSERT_TRUE(dst.ok());
  ASSERT_EQ(copy_tensor(*dst, *transposed), Error::Ok);
  const float expected[6] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(dst->data<float>()[i], expected[i]);
}

// Found by fuzz/input_validation_fuzzer: a dimension of one element may have any stride, and
// the copy scaled it to bytes (signed overflow, UB) although it never steps along it.
TEST(Tensor, StridedCopyIgnoresTheStrideOfUnitDimensions) {
  auto src = Tensor::empty(std::vector<int64_t>{3}, DType::Float32);
  ASSERT_TRUE(src.ok());
  std::iota(src->data<float>(), src->data<float>() + 3, 1.0f);
  auto view = src->make_view(std::vector<int64_t>{1, 3, 1}, std::vector<int64_t>{INT64_MAX / 2, 1, INT64_MAX / 3}, 0);
  ASSERT_TRUE(view.ok());
  auto dst = Tensor::empty(std::vector<int64_t>{1, 3, 1}, DType::Float32);
  ASSERT_TRUE(dst.ok());
  ASSERT_EQ(copy_tensor(*dst, *view), Error::Ok);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(dst->data<float>()[i], static_cast<float>(i + 1));
}

TEST(Tensor, GeometryOverflowIsAnError) {
  auto r = strided_extent_bytes(std::vector<int64_t>{INT64_MAX / 2, 4}, std::vector<int64_t>{4, 1}, DType::Float32);
  EXPECT_EQ(r.error(), Error::InvalidArgument);
}

// Found by fuzz/input_validation_fuzzer: a geometry whose last element index
// is exactly INT64_MAX overflowed (signed, UB) when counting the elements.
TEST(Tensor, GeometryReachingInt64MaxIsAnError) {
  for (const auto& [sizes, strides] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{2}, {INT64_MAX}}, {{1, 2}, {1, INT64_MAX}}, {{2, 2}, {INT64_MAX - 1, 1}}}) {
    auto r = strided_extent_bytes(sizes, strides, DType::UInt8);
    EXPECT_EQ(r.error(), Error::InvalidArgument);
    EXPECT_NE(last_error_message().find("overflows int64"), std::string::npos) << last_error_message();
  }
  // One element short of the limit still fits for 1-byte elements.
  auto fits = strided_extent_bytes(std::vector<int64_t>{2}, std::vector<int64_t>{INT64_MAX - 1}, DType::UInt8);
  ASSERT_TRUE(fits.ok()) << last_error_message();
  EXPECT_EQ(*fits, INT64_MAX);
}

// Found by fuzz/input_validation_fuzzer: an empty dimension ended the checks,
// so a negative stride after it was accepted ([0, 16] strides [16, -5]) while
// the same dimensions in the other order were refused.
TEST(Tensor, NegativeStrideIsAnErrorWhereverTheEmptyDimensionIs) {
  for (const auto& [sizes, strides] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{0, 16}, {16, -5}}, {{16, 0}, {-5, 16}}, {{0, 16}, {-1, 1}}, {{3, 0}, {0, -1}}}) {
    auto r = strided_extent_bytes(sizes, strides, DType::Float32);
    EXPECT_EQ(r.error(), Error::InvalidArgument);
    EXPECT_NE(last_error_message().find("negative size or stride"), std::string::npos) << last_error_message();
  }
  auto empty = strided_extent_bytes(std::vector<int64_t>{0, 16}, std::vector<int64_t>{16, 1}, DType::Float32);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, 0);
}

}  // namespace
}  // namespace kiln
