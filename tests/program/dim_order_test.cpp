// TensorSpec::dim_order through ProgramWriter and ProgramFile: written only
// when not row-major, read back as written, and refused by name when it is not
// a permutation of the tensor's dims (the runtime indexes strides with it).
#include <gtest/gtest.h>

#include "kiln/program_file.h"
#include "program/program_writer.h"
#include "test_util.h"

namespace kiln {
namespace {

using testing_util::pattern;

DimSpec dim(int64_t size) { return DimSpec{size, false, 0, -1, ""}; }

Result<std::shared_ptr<const ProgramFile>> program_with(std::vector<TensorSpec> inputs) {
  ProgramWriter w;
  MethodInfo m;
  m.name = "forward";
  m.backend = "aoti";
  m.device = "cpu";
  m.inputs = std::move(inputs);
  m.outputs = {TensorSpec{"y", DType::Float32, {dim(2)}}};
  m.library_key = "lib";
  EXPECT_EQ(w.add_named_data("lib", pattern(64, 3, 1)), Error::Ok);
  EXPECT_EQ(w.add_method(m), Error::Ok) << last_error_message();
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, w.to_bytes());
  return ProgramFile::from_bytes(bytes);
}

TEST(DimOrder, RoundTripsThroughTheWriterAndReader) {
  TensorSpec image{"image", DType::Float32, {dim(2), dim(3), dim(4), dim(5)}};
  image.dim_order = {0, 2, 3, 1};
  TensorSpec rows{"rows", DType::Float32, {dim(8), dim(6)}};  // row-major: no field
  TensorSpec cols{"cols", DType::Float64, {dim(8), dim(6)}};
  cols.dim_order = {1, 0};
  auto program = program_with({image, rows, cols});
  ASSERT_TRUE(program.ok()) << last_error_message();
  const MethodInfo* m = (*program)->find_method("forward");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->inputs[0].dim_order, (std::vector<uint8_t>{0, 2, 3, 1}));
  EXPECT_TRUE(m->inputs[1].dim_order.empty());
  EXPECT_EQ(m->inputs[2].dim_order, (std::vector<uint8_t>{1, 0}));
  EXPECT_TRUE(m->outputs[0].dim_order.empty());
}

TEST(DimOrder, ThatIsNotAPermutationOfTheDimsIsRefusedNamingTheInput) {
  struct Case {
    std::vector<uint8_t> order;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{0, 1}, "dim_order [0, 1] has 2 entries but the tensor has rank 3"},
      {{0, 1, 1}, "dim_order [0, 1, 1] is not a permutation of [0, 3)"},
      {{0, 1, 3}, "dim_order [0, 1, 3] is not a permutation of [0, 3)"},
      {{2, 1, 0, 3}, "dim_order [2, 1, 0, 3] has 4 entries but the tensor has rank 3"},
  };
  for (const Case& c : cases) {
    TensorSpec x{"x", DType::Float32, {dim(2), dim(3), dim(4)}};
    x.dim_order = c.order;
    auto program = program_with({TensorSpec{"ok", DType::Float32, {dim(1)}}, x});
    ASSERT_FALSE(program.ok());
    EXPECT_EQ(program.error(), Error::InvalidProgram);
    EXPECT_NE(last_error_message().find("inputs[1] 'x': " + c.expected), std::string::npos)
        << last_error_message();
  }
}

}  // namespace
}  // namespace kiln
