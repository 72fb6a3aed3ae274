#include <cpuid.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

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

#if defined(__x86_64__)
// Every token this host lacks is refused with a message naming it and the
// library's whole ISA string; every token it has passes. Whichever host runs
// this, both directions are checked for each token (AMX_TILE alone needs the
// OS too, so it is only checked when the CPU bit says it is absent).
TEST(HostCompatibility, RefusalNamesTheMissingIsa) {
  __builtin_cpu_init();
  const std::pair<const char*, bool> tokens[] = {
      {"AVX2", __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")},
      {"AVX512", __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                     __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw")},
      {"AVX512_VNNI", __builtin_cpu_supports("avx512vnni")},
      {"AVX512_BF16", __builtin_cpu_supports("avx512bf16")},
  };
  for (const auto& [token, has] : tokens) {
    const std::string isa = std::string("INVALID_VEC_ISA ") + token;
    const Error e = check_host_compatibility(with_metadata({{"cpu_isa", isa}}));
    if (has) {
      EXPECT_EQ(e, Error::Ok) << token << ": " << last_error_message();
      continue;
    }
    EXPECT_EQ(e, Error::NotSupported) << token;
    EXPECT_NE(last_error_message().find(std::string("this processor lacks (") + token + "; it needs " + isa),
              std::string::npos)
        << last_error_message();
  }
  unsigned a, b, c, d;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && !(d & (1u << 24))) {
    EXPECT_EQ(check_host_compatibility(with_metadata({{"cpu_isa", "AVX2 AMX_TILE"}})), Error::NotSupported);
    EXPECT_NE(last_error_message().find("lacks (AMX_TILE"), std::string::npos) << last_error_message();
  }
}
#endif

}  // namespace
}  // namespace kiln::aoti
