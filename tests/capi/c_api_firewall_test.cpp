// The C API's no-throw firewall (src/capi/capi_internal.h): every escaping
// exception becomes a status code with a message naming the function, and a
// successful call clears the thread's message.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>
#include <thread>

#include "capi/capi_internal.h"
#include "kiln/c_api.h"

namespace {

using kiln::Error;

// C++ callers see the C API as noexcept.
static_assert(noexcept(kiln_tensor_free(nullptr)));
static_assert(noexcept(kiln_module_execute(nullptr, nullptr, nullptr, 0, nullptr, nullptr)));

TEST(CApiFirewall, BadAllocBecomesOutOfMemory) {
  kiln_status_t status = kiln::capi::guard("kiln_fake", [](const char*) -> Error { throw std::bad_alloc(); });
  EXPECT_EQ(status, KILN_ERROR_OUT_OF_MEMORY);
  EXPECT_NE(std::string(kiln_last_error_message()).find("kiln_fake"), std::string::npos);
  EXPECT_NE(std::string(kiln_last_error_message()).find("out of memory"), std::string::npos);
}

TEST(CApiFirewall, StdExceptionBecomesInternalWithWhat) {
  kiln_status_t status =
      kiln::capi::guard("kiln_fake", [](const char*) -> Error { throw std::runtime_error("broken invariant"); });
  EXPECT_EQ(status, KILN_ERROR_INTERNAL);
  EXPECT_NE(std::string(kiln_last_error_message()).find("broken invariant"), std::string::npos);
}

TEST(CApiFirewall, UnknownExceptionBecomesInternal) {
  kiln_status_t status = kiln::capi::guard("kiln_fake", [](const char*) -> Error { throw 42; });
  EXPECT_EQ(status, KILN_ERROR_INTERNAL);
  EXPECT_NE(std::string(kiln_last_error_message()).find("kiln_fake"), std::string::npos);
}

TEST(CApiFirewall, ErrorCodesPassThroughAndSuccessClearsMessage) {
  kiln_status_t status = kiln::capi::guard("kiln_fake", [](const char*) -> Error {
    return kiln::set_error(Error::NotFound, "no such thing");
  });
  EXPECT_EQ(status, KILN_ERROR_NOT_FOUND);
  EXPECT_STREQ(kiln_last_error_message(), "no such thing");
  // A call that records a message on an internal path but succeeds leaves "".
  status = kiln::capi::guard("kiln_fake", [](const char*) -> Error {
    kiln::set_error(Error::NotFound, "recovered");
    return Error::Ok;
  });
  EXPECT_EQ(status, KILN_OK);
  EXPECT_STREQ(kiln_last_error_message(), "");
}

TEST(CApiFirewall, MessagesAreThreadLocal) {
  size_t dim = 0;
  ASSERT_EQ(kiln_tensor_dim(nullptr, &dim), KILN_ERROR_INVALID_ARGUMENT);
  std::string other;
  std::thread([&] {
    kiln_options_t* options = nullptr;
    EXPECT_EQ(kiln_options_create(&options), KILN_OK);
    kiln_options_free(options);
    other = kiln_last_error_message();
  }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(kiln_last_error_message()).find("kiln_tensor_dim"), std::string::npos);
}

TEST(CApiFirewall, ExecuteOutputsAreFreedByArrayFree) {
  // kiln_tensor_array_free skips NULL slots, so callers can keep some outputs.
  int64_t sizes[1] = {2};
  auto** array = new kiln_tensor_t*[2];
  ASSERT_EQ(kiln_tensor_create_empty(KILN_DTYPE_FLOAT32, sizes, 1, KILN_DEVICE_CPU, 0, &array[0]), KILN_OK);
  ASSERT_EQ(kiln_tensor_create_empty(KILN_DTYPE_FLOAT32, sizes, 1, KILN_DEVICE_CPU, 0, &array[1]), KILN_OK);
  kiln_tensor_t* kept = array[1];
  array[1] = nullptr;
  kiln_tensor_array_free(array, 2);
  size_t nbytes = 0;
  EXPECT_EQ(kiln_tensor_nbytes(kept, &nbytes), KILN_OK);
  EXPECT_EQ(nbytes, 8u);
  kiln_tensor_free(kept);
}

TEST(CApiFirewall, CreateEmptyRejectsBadDeviceAndShape) {
  int64_t negative[1] = {-3};
  kiln_tensor_t* t = nullptr;
  EXPECT_EQ(kiln_tensor_create_empty(KILN_DTYPE_FLOAT32, negative, 1, KILN_DEVICE_CPU, 0, &t),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_tensor_create_empty(KILN_DTYPE_FLOAT32, nullptr, 0, KILN_DEVICE_CPU, -1, &t),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(t, nullptr);
}

}  // namespace
