#include "aoti/host_compatibility.h"

#include <gnu/libc-version.h>
#include <sys/utsname.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace kiln::aoti {
namespace {

std::string metadata(const MethodInfo& method, const char* key) {
  auto it = method.metadata.find(key);
  return it == method.metadata.end() ? std::string() : it->second;
}

#if defined(__x86_64__)
// AMX needs both the CPU bit and the OS enabling tile state (XCR0 bits 17-18).
bool has_amx_tile() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24))) return false;
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & (3u << 17)) == (3u << 17);
}

// Whether the host supports one token of AOTInductor's ISA string
// ("AVX512 AVX512_VNNI AMX_TILE", "AVX2", ...). Unknown tokens return true:
// new tokens must not make every library unloadable.
bool host_supports(const std::string& token) {
  __builtin_cpu_init();
  if (token == "AVX2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (token == "AVX512")
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  if (token == "AVX512_VNNI") return __builtin_cpu_supports("avx512vnni");
  if (token == "AVX512_BF16") return __builtin_cpu_supports("avx512bf16");
  if (token == "AMX_TILE") return has_amx_tile();
  return true;
}
#else
bool host_supports(const std::string&) { return true; }
#endif

// "2.34" < "2.36" comparing numerically, part by part.
bool version_less(const std::string& a, const std::string& b) {
  int a1 = 0, a2 = 0, b1 = 0, b2 = 0;
  std::sscanf(a.c_str(), "%d.%d", &a1, &a2);
  std::sscanf(b.c_str(), "%d.%d", &b1, &b2);
  return a1 != b1 ? a1 < b1 : a2 < b2;
}

}  // namespace

Error check_host_compatibility(const MethodInfo& method) {
  const std::string label = "method '" + method.name + "'";
  const std::string machine = metadata(method, "AOTI_MACHINE");
  utsname host{};
  if (!machine.empty() && ::uname(&host) == 0 && machine != host.machine)
    return set_error(Error::NotSupported, label + ": the library was built for " + machine +
                                              " but this machine is " + host.machine);

  std::istringstream isa(metadata(method, "cpu_isa"));
  std::vector<std::string> missing;
  for (std::string token; isa >> token;)
    if (token != "INVALID_VEC_ISA" && !host_supports(token)) missing.push_back(token);
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return set_error(Error::NotSupported,
                     label + ": the library was compiled for CPU instructions this processor lacks (" + list +
                         "; it needs " + metadata(method, "cpu_isa") +
                         "). Re-export on a machine of this CPU type, or with a lower ISA.");
  }

  const std::string glibc_required = metadata(method, "glibc_required");
  const std::string glibc_host = gnu_get_libc_version();
  if (!glibc_required.empty() && version_less(glibc_host, glibc_required))
    return set_error(Error::NotSupported, label + ": the library needs glibc " + glibc_required +
                                              " but this machine has " + glibc_host +
                                              ". Re-export on a system with glibc <= " + glibc_host + ".");
  return Error::Ok;
}

}  // namespace kiln::aoti
