#include <gtest/gtest.h>

#include "aoti/host_compatibility.h"

namespace kiln::aoti {
namespace {

MethodInfo with_metadata(std::map<std::string, std::string> metadata) {
  MethodInfo m;
  m.name = "forward";
  m.metadata = std::move(metadata);
  return m;
}

TEST(HostCompatibility, MethodsWithoutMetadataPass) { EXPECT_EQ(check_host_compatibility(with_metadata({})), Error::Ok); }

TEST(HostCompatibility, RefusesAnotherArchitecture) {
  EXPECT_EQ(check_host_compatibility(with_metadata({{"AOTI_MACHINE", "aarch64"}})), Error::NotSupported);
  EXPECT_NE(last_error_message().find("built for aarch64"), std::string::npos) << last_error_message();
}

TEST(HostCompatibility, RefusesANewerGlibcNamingBoth) {
  EXPECT_EQ(check_host_compatibility(with_metadata({{"glibc_required", "9.99"}})), Error::NotSupported);
  EXPECT_NE(last_error_message().find("needs glibc 9.99"), std::string::npos) << last_error_message();
  EXPECT_EQ(check_host_compatibility(with_metadata({{"glibc_required", "2.2"}})), Error::Ok);
}

TEST(HostCompatibility, IsaTokensAreCheckedAgainstTheHost) {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  Error e = check_host_compatibility(with_metadata({{"cpu_isa", "AVX512"}}));
  EXPECT_EQ(e, avx512 ? Error::Ok : Error::NotSupported);
  EXPECT_EQ(check_host_compatibility(with_metadata({{"cpu_isa", "INVALID_VEC_ISA"}})), Error::Ok);
  EXPECT_EQ(check_host_compatibility(with_metadata({{"cpu_isa", "SOME_FUTURE_ISA"}})), Error::Ok);
}

}  // namespace
}  // namespace kiln::aoti
