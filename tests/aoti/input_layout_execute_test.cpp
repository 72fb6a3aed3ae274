// Inputs of any layout on a CPU method, with the stand-in model library
// (fixtures/fake_model.cpp), which like AOTInductor's kernels reads its input
// as dense in the layout it was compiled for and never looks at the tensor's
// strides: y[i] = scale * (the i-th element of x in memory). Views with other
// strides must be copied into that layout first, and views that reach outside
// their memory refused, before the library runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "fake_program.h"
#include "kiln/module.h"
#include "program/program_writer.h"

namespace kiln {
namespace {

constexpr float kScale = 3.0f;

// A one-method program over the fake model, written to `path`: input "x"
// with `dims` and `dim_order`, output "y" of the same dims; `mutated` names x
// in metadata mutated_inputs (as if the method wrote it in place).
std::string layout_program(const std::string& path, std::vector<DimSpec> dims, std::vector<uint8_t> dim_order,
                           bool mutated = false) {
  ProgramWriter writer;
  MethodInfo method = fake_forward_method();
  TensorSpec x{"x", DType::Float32, dims};
  x.dim_order = std::move(dim_order);
  method.inputs = {x};
  method.outputs = {TensorSpec{"y", DType::Float32, dims}};
  if (mutated) method.metadata["mutated_inputs"] = "x";
  EXPECT_EQ(writer.add_method(method), Error::Ok) << last_error_message();
  EXPECT_EQ(writer.add_named_data("lib", read_file(KILN_FAKE_MODEL_PATH)), Error::Ok) << last_error_message();
  const float scale = kScale;
  EXPECT_EQ(
      writer.add_named_data("weights", std::span(reinterpret_cast<const uint8_t*>(&scale), sizeof scale)),
      Error::Ok);
  EXPECT_EQ(writer.write(path), Error::Ok) << last_error_message();
  return path;
}

DimSpec dyn(int64_t max) { return DimSpec{4, true, 0, max, "n"}; }
DimSpec fixed(int64_t size) { return DimSpec{size, false, 0, -1, ""}; }

Tensor view(std::vector<float>& memory, std::vector<int64_t> sizes, std::vector<int64_t> strides,
            int64_t offset = 0) {
  auto base = Tensor::from_blob(memory.data(), std::vector<int64_t>{static_cast<int64_t>(memory.size())},
                                std::vector<int64_t>{1}, DType::Float32);
  EXPECT_TRUE(base.ok()) << last_error_message();
  auto v = base->make_view(sizes, strides, offset);
  EXPECT_TRUE(v.ok()) << last_error_message();
  return *v;
}

std::vector<float> flat(const Tensor& t) {
  EXPECT_TRUE(t.is_contiguous());
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

class InputLayoutExecute : public ::testing::Test {
 protected:
  std::string program(const std::string& name, std::vector<DimSpec> dims, std::vector<uint8_t> dim_order,
                      bool mutated = false) {
    return layout_program(temp_.file(name + ".kiln"), std::move(dims), std::move(dim_order), mutated);
  }
  testing_util::TempDir temp_{"kiln-input-layout"};
};

// The reproducer: a column of a wider array (stride 2) was read as if dense,
// giving the interleaved values.
TEST_F(InputLayoutExecute, StridedViewGivesTheValuesOfTheView) {
  Module module(program("layout-strided", {dyn(16)}, {}));
  std::vector<float> memory = {1, -100, 2, -100, 3, -100, 4, -100};
  auto out = module.forward({view(memory, {4}, {2})});
  ASSERT_TRUE(out.ok()) << last_error_message();
  EXPECT_EQ(flat((*out)[0]), (std::vector<float>{3, 6, 9, 12}));
  EXPECT_EQ(memory[1], -100.0f);  // the caller's memory is untouched
}

// A stride-0 view of one float described as 16 elements: its extent (4 bytes)
// fits its storage, so it is valid, but read densely it reaches 60 bytes past
// the storage (ASan reports that as a heap overflow).
TEST_F(InputLayoutExecute, BroadcastViewIsExpandedNotReadPastItsMemory) {
  Module module(program("layout-broadcast", {dyn(16)}, {}));
  auto one = Tensor::empty(std::vector<int64_t>{1}, DType::Float32);
  ASSERT_TRUE(one.ok());
  one->data<float>()[0] = 2.5f;
  auto expanded = one->make_view(std::vector<int64_t>{16}, std::vector<int64_t>{0}, 0);
  ASSERT_TRUE(expanded.ok()) << last_error_message();
  auto out = module.forward({*expanded});
  ASSERT_TRUE(out.ok()) << last_error_message();
  EXPECT_EQ(flat((*out)[0]), std::vector<float>(16, kScale * 2.5f));
}

TEST_F(InputLayoutExecute, OffsetAndSizeOneViewsInTheCompiledLayoutAreUsedAsTheyAre) {
  Module module(program("layout-offset", {dyn(16)}, {}));
  std::vector<float> memory = {-1, -1, 5, 6, 7};
  auto out = module.forward({view(memory, {3}, {1}, 2)});
  ASSERT_TRUE(out.ok()) << last_error_message();
  EXPECT_EQ(flat((*out)[0]), (std::vector<float>{15, 18, 21}));
  // One element: its stride addresses nothing.
  out = module.forward({view(memory, {1}, {7}, 4)});
  ASSERT_TRUE(out.ok()) << last_error_message();
  EXPECT_EQ(flat((*out)[0]), (std::vector<float>{21}));
}

// A method compiled for column-major input (dim order (1, 0), as a transposed
// example would give): the library reads x[r][c] at c * rows + r. A row-major
// x is laid out that way first; a transposed view already is.
TEST_F(InputLayoutExecute, InputsAreLaidOutInTheOrderTheMethodWasCompiledFor) {
  Module module(program("layout-colmajor", {fixed(2), fixed(3)}, {1, 0}));
  std::vector<float> rows = {1, 2, 3, 4, 5, 6};                   // x = [[1, 2, 3], [4, 5, 6]]
  const std::vector<float> column_major = {3, 12, 6, 15, 9, 18};  // kScale * (1, 4, 2, 5, 3, 6)
  auto out = module.forward({view(rows, {2, 3}, {3, 1})});
  ASSERT_TRUE(out.ok()) << last_error_message();
  EXPECT_EQ(flat((*out)[0]), column_major);
  std::vector<float> cols = {1, 4, 2, 5, 3, 6};  // the same x, stored column by column
  out = module.forward({view(cols, {2, 3}, {1, 2})});
  ASSERT_TRUE(out.ok()) << last_error_message();
  EXPECT_EQ(flat((*out)[0]), column_major);
  // Broadcast rows: [[7, 8, 9], [7, 8, 9]].
  std::vector<float> row = {7, 8, 9};
  out = module.forward({view(row, {2, 3}, {0, 1})});
  ASSERT_TRUE(out.ok()) << last_error_message();
  EXPECT_EQ(flat((*out)[0]), (std::vector<float>{21, 21, 24, 24, 27, 27}));
}

// An input the method writes in place cannot be copied (the writes would go to
// the copy): a mismatch is refused, naming the input, both strides and why.
TEST_F(InputLayoutExecute, InputWrittenInPlaceIsRefusedWhenItsLayoutDiffers) {
  Module module(program("layout-mutated", {fixed(2), fixed(3)}, {}, /*mutated=*/true));
  std::vector<float> cols = {1, 4, 2, 5, 3, 6};
  auto out = module.forward({view(cols, {2, 3}, {1, 2})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error(), Error::InvalidArgument);
  const std::string& message = last_error_message();
  EXPECT_NE(message.find("input 0 ('x') has strides [1, 2]"), std::string::npos) << message;
  EXPECT_NE(message.find("compiled for row-major strides [3, 1]"), std::string::npos) << message;
  EXPECT_NE(message.find("writes this input in place"), std::string::npos) << message;
  EXPECT_NE(message.find("lost"), std::string::npos) << message;
  // In the compiled layout it runs, on the caller's memory.
  std::vector<float> rows = {1, 2, 3, 4, 5, 6};
  out = module.forward({view(rows, {2, 3}, {3, 1})});
  ASSERT_TRUE(out.ok()) << last_error_message();
  EXPECT_EQ(flat((*out)[0]), (std::vector<float>{3, 6, 9, 12, 15, 18}));
}

// The extent check runs on every call before the library: a C++ tensor whose
// view reaches past its storage (the unchecked constructor allows it) is
// refused, whatever its layout.
TEST_F(InputLayoutExecute, ViewsReachingOutsideTheirStorageAreRefusedBeforeAnyKernel) {
  Module module(program("layout-extent", {dyn(16)}, {}));
  std::vector<float> memory(4, 1.0f);
  auto storage = Storage::create(memory.data(), memory.size() * sizeof(float), Device{});
  for (const Tensor& bad :
       {Tensor(storage, DType::Float32, {8}, {1}), Tensor(storage, DType::Float32, {3}, {2}),
        Tensor(storage, DType::Float32, {4}, {1}, 1)}) {
    auto out = module.forward({bad});
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.error(), Error::InvalidArgument);
    EXPECT_NE(last_error_message().find("reaches outside its storage of 16 bytes"), std::string::npos)
        << last_error_message();
  }
}

}  // namespace
}  // namespace kiln
