#include <gtest/gtest.h>

#include "runtime/input_validation.h"

namespace kiln {
namespace {

MethodInfo make_method() {
  MethodInfo m;
  m.name = "forward";
  m.device = "cpu";
  TensorSpec x;
  x.name = "x";
  x.dtype = DType::Float32;
  x.dims = {DimSpec{4, true, 1, 64, "batch"}, DimSpec{16, false, 0, -1, ""}};
  TensorSpec ids;
  ids.name = "ids";
  ids.dtype = DType::Int64;
  ids.dims = {DimSpec{3, false, 0, -1, ""}};
  m.inputs = {x, ids};
  return m;
}

Tensor make(std::vector<int64_t> sizes, DType dtype) { return *Tensor::empty(sizes, dtype); }

TEST(InputValidation, AcceptsTensorsWithinTheContract) {
  auto m = make_method();
  std::vector<Tensor> in = {make({7, 16}, DType::Float32), make({3}, DType::Int64)};
  EXPECT_EQ(validate_inputs(m, in), Error::Ok) << last_error_message();
}

TEST(InputValidation, NamesTheWrongInputAndWhy) {
  auto m = make_method();
  struct Case {
    std::vector<Tensor> inputs;
    std::string expected;
  };
  std::vector<Case> cases = {
      {{make({7, 16}, DType::Float32)}, "takes 2 inputs, got 1"},
      {{make({7, 16}, DType::Float64), make({3}, DType::Int64)}, "input 0 ('x') must be float32, got float64"},
      {{make({7, 16, 1}, DType::Float32), make({3}, DType::Int64)}, "input 0 ('x') must have rank 2"},
      {{make({7, 15}, DType::Float32), make({3}, DType::Int64)}, "input 0 ('x') dim 1 is 15"},
      {{make({65, 16}, DType::Float32), make({3}, DType::Int64)}, "dim 0 is 65 but must be in [batch:1..64, 16]"},
      {{make({0, 16}, DType::Float32), make({3}, DType::Int64)}, "dim 0 is 0"},
      {{make({2, 16}, DType::Float32), Tensor()}, "input 1 ('ids') is an undefined tensor"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(validate_inputs(m, c.inputs), Error::InvalidArgument);
    EXPECT_NE(last_error_message().find(c.expected), std::string::npos)
        << "message: " << last_error_message() << "\nexpected to contain: " << c.expected;
  }
}

// A device tensor given to a CPU method is refused by name, before anything
// could read device memory as host memory. The tensor only claims to be on
// cuda:1 (no GPU is needed: validation never touches the data).
TEST(InputValidation, NamesAnInputOnAnotherDevice) {
  auto m = make_method();
  std::vector<int64_t> ids(3, 0);
  auto on_gpu = Tensor::from_blob(ids.data(), std::vector<int64_t>{3}, std::vector<int64_t>{1}, DType::Int64,
                                  Device{DeviceType::CUDA, 1});
  ASSERT_TRUE(on_gpu.ok()) << last_error_message();
  std::vector<Tensor> in = {make({2, 16}, DType::Float32), *on_gpu};
  EXPECT_EQ(validate_inputs(m, in), Error::InvalidArgument);
  EXPECT_NE(last_error_message().find("input 1 ('ids') is on cuda:1 but the method runs on cpu"), std::string::npos)
      << last_error_message();
}

// Found by fuzz/input_validation_fuzzer: a storage offset whose byte position
// overflows int64 (UBSan: signed overflow), and a negative offset that made
// the view start before its storage, were not caught.
TEST(InputValidation, RejectsStorageOffsetsOutsideTheStorage) {
  MethodInfo m;
  m.name = "forward";
  m.device = "cpu";
  TensorSpec x;
  x.name = "x";
  x.dtype = DType::Float32;
  x.dims = {DimSpec{2, false, 0, -1, ""}};
  m.inputs = {x};
  static float backing[64];
  auto view = [](int64_t offset, size_t storage_bytes) {
    return Tensor(Storage::create(backing, storage_bytes, Device{}), DType::Float32, {2}, {1}, offset);
  };
  struct Case {
    int64_t offset;
    size_t storage_bytes;
    std::string expected;
  };
  const std::vector<Case> rejected = {
      {int64_t{6872316419617283935}, sizeof(backing), "storage offset 6872316419617283935, 8 bytes"},
      {INT64_MAX, sizeof(backing), "storage offset 9223372036854775807"},
      {-1, sizeof(backing), "storage offset -1, 8 bytes) reaches outside its storage of 256 bytes"},
      {INT64_MIN, SIZE_MAX, "storage offset -9223372036854775808"},
      {63, sizeof(backing), "storage offset 63"},  // last element one past the end
  };
  for (const Case& c : rejected) {
    std::vector<Tensor> in = {view(c.offset, c.storage_bytes)};
    EXPECT_EQ(validate_inputs(m, in), Error::InvalidArgument) << "offset " << c.offset;
    EXPECT_NE(last_error_message().find(c.expected), std::string::npos)
        << "message: " << last_error_message() << "\nexpected to contain: " << c.expected;
  }
  // The largest offset that still fits, and a storage larger than INT64_MAX.
  std::vector<Tensor> last = {view(62, sizeof(backing))};
  EXPECT_EQ(validate_inputs(m, last), Error::Ok) << last_error_message();
  std::vector<Tensor> huge = {view(62, SIZE_MAX)};
  EXPECT_EQ(validate_inputs(m, huge), Error::Ok) << last_error_message();
}

}  // namespace
}  // namespace kiln
