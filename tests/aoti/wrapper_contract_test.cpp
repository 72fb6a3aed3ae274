// read_wrapper_contract on wrapper sources written in the form torch 2.11's
// AOTInductor emits (cpp_wrapper_cpu.py, generate_input_output_runtime_checks);
// the real thing is covered end to end by tests/python/test_pt2_import.py.
#include "aoti/wrapper_contract.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln::aoti {
namespace {

std::string dtype_check(int i, const std::string& name, const std::string& dtype) {
  return "AOTI_NOINLINE static void check_input_" + std::to_string(i) +
         "(\n    AtenTensorHandle* input_handles\n) {\n    ConstantHandle " + name +
         " = ConstantHandle(input_handles[" + std::to_string(i) + "]);\n    int32_t " + name + "_expected_dtype = aoti_torch_dtype_" +
         dtype + "();\n    if (" + name + "_expected_dtype != " + name + "_dtype) {\n        throw std::runtime_error(ss.str());\n    }\n";
}
std::string static_dim(int i, int d, int64_t n) {
  return "    if (" + std::to_string(n) + " != x_size[" + std::to_string(d) + "]) {\n        ss << \"input_handles[" +
         std::to_string(i) + "]: unmatched dim value at " + std::to_string(d) + ", \"\n           << \"expected: " +
         std::to_string(n) + ", \" << \"but got: \" << x_size[" + std::to_string(d) +
         "]\n        throw std::runtime_error(ss.str());\n    }\n";
}
std::string lower_bound(int i, int d, int64_t n) {
  return "    if (x_size[" + std::to_string(d) + "] < " + std::to_string(n) + ") {\n        ss << \"input_handles[" +
         std::to_string(i) + "]: dim value is too small at " + std::to_string(d) +
         ", \"\n           << \"expected it to be >= " + std::to_string(n) +
         ", \" << \"but got: \"\n        throw std::runtime_error(ss.str());\n    }\n";
}
std::string upper_bound(int i, int d, int64_t n) {
  return "    if (x_size[" + std::to_string(d) + "] > " + std::to_string(n) + ") {\n        ss << \"input_handles[" +
         std::to_string(i) + "]: dim value is too large at " + std::to_string(d) +
         ", \"\n           << \"expected to be <= " + std::to_string(n) +
         ", \" << \"but got: \"\n        throw std::runtime_error(ss.str());\n    }\n";
}
std::string stride(int i, int d, int64_t n) {
  return "    if (" + std::to_string(n) + " != x_stride[" + std::to_string(d) +
         "]) {\n        ss << \"input_handles[" + std::to_string(i) + "]: unmatched stride value at " +
         std::to_string(d) + ", \"\n           << \"expected: " + std::to_string(n) +
         ", \" << \"but got: \" << x_stride[" + std::to_string(d) +
         "]\n        throw std::runtime_error(ss.str());\n    }\n";
}
const std::string kEnd = "}\n";
const std::string kNames =
    "    inputs_info_[0].name = \"arg0_1\";\n    inputs_info_[1].name = \"arg1_1\";\n"
    "    outputs_info_[0].name = \"output0\";\n";
const std::string kTail = "static bool _check_aoti_runtime_check_inputs_env() {}\nstatic void __check_inputs_outputs() {}\n";

TEST(WrapperContract, StaticAndDynamicDims) {
  // input 0: float32[s0 in 2..64, 8]; input 1: int64[batch >= 1, unchecked, 3]
  const std::string source = kNames + dtype_check(0, "arg0_1", "float32") + lower_bound(0, 0, 2) +
                             upper_bound(0, 0, 64) + static_dim(0, 1, 8) + stride(0, 1, 1) + kEnd +
                             dtype_check(1, "arg1_1", "int64") + lower_bound(1, 0, 1) + static_dim(1, 2, 3) +
                             stride(1, 2, 1) + kEnd + kTail;
  auto contract = read_wrapper_contract(source, "test");
  ASSERT_TRUE(contract.ok()) << last_error_message();
  ASSERT_EQ(contract->inputs.size(), 2u);
  ASSERT_EQ(contract->outputs.size(), 1u);
  EXPECT_EQ(contract->outputs[0].name, "output0");
  EXPECT_FALSE(contract->output_known[0]);  // no run_impl in this source

  const TensorSpec& a = contract->inputs[0];
  EXPECT_EQ(a.name, "arg0_1");
  EXPECT_EQ(a.dtype, DType::Float32);
  ASSERT_EQ(a.dims.size(), 2u);
  EXPECT_TRUE(a.dims[0].dynamic);
  EXPECT_EQ(a.dims[0].min, 2);
  EXPECT_EQ(a.dims[0].max, 64);
  EXPECT_EQ(a.dims[0].size, 2);  // smallest allowed: the example size `kiln run` uses
  EXPECT_FALSE(a.dims[1].dynamic);
  EXPECT_EQ(a.dims[1].size, 8);

  const TensorSpec& b = contract->inputs[1];
  EXPECT_EQ(b.dtype, DType::Int64);
  ASSERT_EQ(b.dims.size(), 3u);
  EXPECT_TRUE(b.dims[0].dynamic);
  EXPECT_EQ(b.dims[0].min, 1);
  EXPECT_EQ(b.dims[0].max, -1);
  EXPECT_TRUE(b.dims[1].dynamic);  // no check names it: dynamic, unbounded
  EXPECT_EQ(b.dims[1].min, 0);
  EXPECT_EQ(b.dims[1].max, -1);
  EXPECT_FALSE(b.dims[2].dynamic);
  EXPECT_EQ(b.dims[2].size, 3);
}

// run_impl as torch 2.11 writes it: sizes bound to symbols, buffers renamed
// on reuse, a view output through a temporary, an output repeated, and one
// produced in a form the reader does not follow.
const std::string kRunImpl = R"(
void AOTInductorModel::run_impl(
    AtenTensorHandle* input_handles, AtenTensorHandle* output_handles, DeviceStreamType stream,
    AOTIProxyExecutorHandle proxy_executor) {
    auto inputs = steal_from_raw_handles_to_raii_handles(input_handles, 1);
    auto arg0_1 = std::move(inputs[0]);
    auto arg0_1_size = arg0_1.sizes();
    int64_t s31 = arg0_1_size[0];
    const int64_t int_array_0[] = {s31, 64L};
    static constexpr int64_t int_array_1[] = {64L, 1L};
    AtenTensorHandle buf0_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_0, int_array_1, cached_torch_dtype_float32, cached_torch_device_type_cpu, this->device_idx_, &buf0_handle));
    RAIIAtenTensorHandle buf0(buf0_handle);
    auto buf1 = std::move(buf0);  // reuse
    static constexpr int64_t *int_array_2=nullptr;
    AtenTensorHandle buf10_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(0, int_array_2, int_array_2, cached_torch_dtype_int64, cached_torch_device_type_cpu, this->device_idx_, &buf10_handle));
    RAIIAtenTensorHandle buf10(buf10_handle);
    const int64_t int_array_3[] = {2L*s31, 32L};
    static constexpr int64_t int_array_4[] = {32L, 1L};
    RAIIAtenTensorHandle var_0 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf1, 2, int_array_3, int_array_4, 0L));
    output_handles[0] = buf1.release();
    output_handles[1] = buf10.release();
    output_handles[2] = var_0.release();
    output_handles[3] = output_handles[0];
    aoti_torch_clone(constant_0, &output_handles[4]);
} // AOTInductorModel::run_impl
)";

TEST(WrapperContract, OutputsInferredFromRunImpl) {
  std::string names = "    inputs_info_[0].name = \"arg0_1\";\n";
  for (int i = 0; i < 5; ++i) names += "    outputs_info_[" + std::to_string(i) + "].name = \"output" + std::to_string(i) + "\";\n";
  const std::string source = names + dtype_check(0, "arg0_1", "float32") + lower_bound(0, 0, 2) + upper_bound(0, 0, 64) +
                             static_dim(0, 1, 32) + kEnd + kTail + kRunImpl;
  auto contract = read_wrapper_contract(source, "test");
  ASSERT_TRUE(contract.ok()) << last_error_message();
  // The input's dynamic dimension is named after its symbol.
  EXPECT_EQ(contract->inputs[0].dims[0].name, "s31");
  ASSERT_EQ(contract->outputs.size(), 5u);
  EXPECT_EQ(contract->output_known, (std::vector<bool>{true, true, true, true, false}));

  const TensorSpec& a = contract->outputs[0];  // buf1 <- buf0: float32[s31, 64]
  EXPECT_EQ(a.name, "output0");
  EXPECT_EQ(a.dtype, DType::Float32);
  ASSERT_EQ(a.dims.size(), 2u);
  EXPECT_TRUE(a.dims[0].dynamic);
  EXPECT_EQ(a.dims[0].name, "s31");
  EXPECT_EQ(a.dims[0].min, 2);  // the input's bounds
  EXPECT_EQ(a.dims[0].max, 64);
  EXPECT_FALSE(a.dims[1].dynamic);
  EXPECT_EQ(a.dims[1].size, 64);

  EXPECT_EQ(contract->outputs[1].dtype, DType::Int64);  // buf10, not buf1
  EXPECT_TRUE(contract->outputs[1].dims.empty());

  const TensorSpec& view = contract->outputs[2];  // a view of buf1
  EXPECT_EQ(view.dtype, DType::Float32);
  ASSERT_EQ(view.dims.size(), 2u);
  EXPECT_TRUE(view.dims[0].dynamic);
  EXPECT_EQ(view.dims[0].name, "2L*s31");
  EXPECT_EQ(view.dims[0].max, -1);
  EXPECT_EQ(view.dims[1].size, 32);

  EXPECT_EQ(contract->outputs[3].dims.size(), 2u);  // same as output 0
  EXPECT_EQ(contract->outputs[4].name, "output4");  // a cloned constant: not followed
}

TEST(WrapperContract, ScalarInputHasRankZero) {
  const std::string source = "    inputs_info_[0].name = \"arg0_1\";\n" + dtype_check(0, "arg0_1", "bfloat16") + kEnd + kTail;
  auto contract = read_wrapper_contract(source, "test");
  ASSERT_TRUE(contract.ok()) << last_error_message();
  EXPECT_EQ(contract->inputs[0].dtype, DType::BFloat16);
  EXPECT_TRUE(contract->inputs[0].dims.empty());
}

TEST(WrapperContract, MissingCheckFunctionIsNamed) {
  const std::string source = kNames + dtype_check(0, "arg0_1", "float32") + kEnd + kTail;
  auto contract = read_wrapper_contract(source, "pkg: model 'model'");
  ASSERT_FALSE(contract.ok());
  EXPECT_EQ(contract.error(), Error::InvalidProgram);
  EXPECT_NE(last_error_message().find("pkg: model 'model': input 1 ('arg1_1')"), std::string::npos)
      << last_error_message();
  EXPECT_NE(last_error_message().find("check_input_1"), std::string::npos) << last_error_message();
}

TEST(WrapperContract, UnknownDtypeIsNotSupported) {
  const std::string source = "    inputs_info_[0].name = \"arg0_1\";\n" + dtype_check(0, "arg0_1", "complex32") + kEnd + kTail;
  auto contract = read_wrapper_contract(source, "test");
  ASSERT_FALSE(contract.ok());
  EXPECT_EQ(contract.error(), Error::NotSupported);
  EXPECT_NE(last_error_message().find("complex32"), std::string::npos) << last_error_message();
}

TEST(WrapperContract, GapInInputNamesIsInvalid) {
  const std::string source = "    inputs_info_[1].name = \"arg1_1\";\n" + kTail;
  auto contract = read_wrapper_contract(source, "test");
  ASSERT_FALSE(contract.ok());
  EXPECT_NE(last_error_message().find("inputs_info_[1] but not [0]"), std::string::npos) << last_error_message();
}

TEST(WrapperContract, AbsurdDimensionIndexIsRejected) {
  const std::string source =
      "    inputs_info_[0].name = \"arg0_1\";\n" + dtype_check(0, "arg0_1", "float32") + static_dim(0, 1000000, 2) + kEnd + kTail;
  auto contract = read_wrapper_contract(source, "test");
  ASSERT_FALSE(contract.ok());
  EXPECT_NE(last_error_message().find("dimension >= 64"), std::string::npos) << last_error_message();
}

// One input "x" of `dtype` whose checks are `checks`, read back.
Result<TensorSpec> single_input(const std::string& checks) {
  const std::string source =
      "    inputs_info_[0].name = \"arg0_1\";\n    outputs_info_[0].name = \"output0\";\n" +
      dtype_check(0, "arg0_1", "float32") + checks + kEnd + kTail;
  auto contract = read_wrapper_contract(source, "test");
  if (!contract.ok()) return contract.error();
  return contract->inputs.at(0);
}

// The layout the library was compiled for comes from the stride checks:
// row-major whenever they agree with it (also past a dynamic dimension, whose
// outer strides are expressions and go unchecked), else the dense order they
// describe.
TEST(WrapperContract, LayoutFromTheStrideChecks) {
  struct Case {
    const char* what;
    std::string checks;
    std::vector<uint8_t> dim_order;
  };
  const std::vector<Case> cases = {
      {"row-major, static",
       static_dim(0, 0, 8) + static_dim(0, 1, 6) + stride(0, 0, 6) + stride(0, 1, 1),
       {}},
      {"row-major, dynamic rows", lower_bound(0, 0, 2) + static_dim(0, 1, 6) + stride(0, 1, 1), {}},
      {"channels_last",
       static_dim(0, 0, 2) + static_dim(0, 1, 3) + static_dim(0, 2, 4) + static_dim(0, 3, 5) +
           stride(0, 0, 60) + stride(0, 1, 1) + stride(0, 2, 15) + stride(0, 3, 3),
       {0, 2, 3, 1}},
      {"channels_last, dynamic batch",
       lower_bound(0, 0, 1) + static_dim(0, 1, 3) + static_dim(0, 2, 4) + static_dim(0, 3, 5) +
           stride(0, 0, 60) + stride(0, 1, 1) + stride(0, 2, 15) + stride(0, 3, 3),
       {0, 2, 3, 1}},
      // A transposed example with a dynamic first dim: strides (1, s0).
      {"transposed, dynamic", lower_bound(0, 0, 2) + static_dim(0, 1, 4) + stride(0, 0, 1), {1, 0}},
      {"transposed, static",
       static_dim(0, 0, 8) + static_dim(0, 1, 6) + stride(0, 0, 1) + stride(0, 1, 8),
       {1, 0}},
      // A static size-1 dim's stride addresses nothing: (4, 1).t() is row-major.
      {"size-1 dim", static_dim(0, 0, 1) + static_dim(0, 1, 4) + stride(0, 0, 1) + stride(0, 1, 1), {}},
      {"empty", static_dim(0, 0, 0) + static_dim(0, 1, 4) + stride(0, 0, 1) + stride(0, 1, 9), {}},
  };
  for (const Case& c : cases) {
    auto spec = single_input(c.checks);
    ASSERT_TRUE(spec.ok()) << c.what << ": " << last_error_message();
    EXPECT_EQ(spec->dim_order, c.dim_order) << c.what;
  }
}

// A library compiled for a slice (strides (12, 2) over [8, 6]) or an expanded
// view (stride 0) has no dense layout Kiln could copy inputs into.
TEST(WrapperContract, StrideChecksThatFitNoDenseLayoutAreRefusedNamingTheInput) {
  for (const std::string& checks :
       {static_dim(0, 0, 8) + static_dim(0, 1, 6) + stride(0, 0, 12) + stride(0, 1, 2),
        static_dim(0, 0, 8) + static_dim(0, 1, 6) + stride(0, 0, 0) + stride(0, 1, 1),
        lower_bound(0, 0, 2) + static_dim(0, 1, 4) + stride(0, 0, 1) + stride(0, 1, 3)}) {
    auto spec = single_input(checks);
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.error(), Error::InvalidProgram);
    EXPECT_NE(last_error_message().find("input 0 ('arg0_1')"), std::string::npos) << last_error_message();
    EXPECT_NE(last_error_message().find("fit no dense layout"), std::string::npos) << last_error_message();
  }
}

}  // namespace
}  // namespace kiln::aoti
