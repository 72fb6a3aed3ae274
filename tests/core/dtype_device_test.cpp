#include <gtest/gtest.h>

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/error.h"

#include <thread>

namespace kiln {
namespace {

TEST(DType, SizesAndNamesRoundTrip) {
  EXPECT_EQ(element_size(DType::BFloat16), 2u);
  EXPECT_EQ(element_size(DType::Int64), 8u);
  EXPECT_EQ(dtype_from_name("bfloat16"), DType::BFloat16);
  EXPECT_EQ(dtype_from_name("complex64"), DType::Complex64);
  EXPECT_EQ(element_size(DType::Complex64), 8u);
  EXPECT_EQ(element_size(DType::Complex128), 16u);
  EXPECT_FALSE(dtype_from_name("complex32").has_value());
  EXPECT_FALSE(is_known_dtype(8));  // complex32 is not supported
}

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(parse_device("cuda:1"), (Device{DeviceType::CUDA, 1}));
  EXPECT_EQ(parse_device("cpu"), (Device{DeviceType::CPU, 0}));
  EXPECT_FALSE(parse_device("cuda:").has_value());
  EXPECT_FALSE(parse_device("tpu").has_value());
  EXPECT_FALSE(parse_device("cuda:-1").has_value());
  EXPECT_EQ(device_string(Device{DeviceType::CUDA, 2}), "cuda:2");
}

TEST(Error, MessageIsThreadLocal) {
  EXPECT_EQ(set_error(Error::NotFound, "missing x"), Error::NotFound);
  EXPECT_EQ(last_error_message(), "missing x");
  std::string other;
  std::thread([&] { other = last_error_message(); }).join();
  EXPECT_EQ(other, "");
}

}  // namespace
}  // namespace kiln
