#include "aoti/host_compatibility.h"

#include <gnu/libc-version.h>
#include <sys/utsname.h>

#include <cctype>
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

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool strip_prefix(std::string& s, std::string_view prefix) {
  if (s.rfind(prefix, 0) != 0) return false;
  s.erase(0, prefix.size());
  return true;
}

bool strip_suffix(std::string& s, std::string_view suffix) {
  if (s.size() < suffix.size() || s.compare(s.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  s.erase(s.size() - suffix.size());
  return true;
}

// "90", "9.0", "100", "12.0" -> 10 * major + minor; -1 if malformed.
int parse_capability(const std::string& digits) {
  if (digits.empty() || digits.size() > 4) return -1;
  const size_t dot = digits.find('.');
  auto all_digits = [](std::string_view t) {
    if (t.empty()) return false;
    for (char c : t)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    return true;
  };
  if (dot == std::string::npos) {
    if (!all_digits(digits) || digits.size() < 2) return -1;
    return std::stoi(digits);
  }
  const std::string major = digits.substr(0, dot), minor = digits.substr(dot + 1);
  if (!all_digits(major) || minor.size() != 1 || !all_digits(minor)) return -1;
  return std::stoi(major) * 10 + (minor[0] - '0');
}

}  // namespace

Result<std::vector<CudaArch>> parse_cuda_archs(std::string_view text) {
  std::vector<CudaArch> out;
  std::string entry;
  auto flush = [&]() -> Error {
    if (entry.empty()) return Error::Ok;
    std::string s = lower(entry);
    CudaArch arch;
    if (strip_suffix(s, "+ptx")) arch.ptx = true;
    if (strip_prefix(s, "compute_")) arch.ptx = true;
    else (void)strip_prefix(s, "sm_");
    if (!s.empty() && (s.back() == 'a' || s.back() == 'f')) {
      arch.variant = s.back();
      s.pop_back();
    }
    arch.cc = parse_capability(s);
    if (arch.cc <= 0)
      return set_error(Error::InvalidProgram, "cuda_archs entry '" + entry + "' is not a CUDA architecture (in '" +
                                                  std::string(text) + "')");
    out.push_back(arch);
    entry.clear();
    return Error::Ok;
  };
  for (char c : text) {
    if (c == ',' || c == ';' || std::isspace(static_cast<unsigned char>(c))) {
      KILN_RETURN_IF_ERROR(flush());
    } else {
      entry.push_back(c);
    }
  }
  KILN_RETURN_IF_ERROR(flush());
  if (out.empty()) return set_error(Error::InvalidProgram, "cuda_archs '" + std::string(text) + "' names no architecture");
  return out;
}

std::string cuda_arch_name(const CudaArch& arch) {
  std::string name = "sm_" + std::to_string(arch.cc);
  if (arch.variant) name.push_back(arch.variant);
  if (arch.ptx) name += "+PTX";
  return name;
}

bool cuda_arch_runs_on(const CudaArch& arch, int device_cc) {
  if (arch.variant == 'a') return device_cc == arch.cc;
  if (arch.variant == 'f') return device_cc / 10 == arch.cc / 10 && device_cc >= arch.cc;
  if (arch.ptx) return device_cc >= arch.cc;
  return device_cc == arch.cc;
}

Error check_cuda_compatibility(const MethodInfo& method, int device_cc, std::string_view device_name) {
  const std::string label = "method '" + method.name + "'";
  std::string source = "cuda_archs";
  std::string text = metadata(method, "cuda_archs");
  if (text.empty()) {
    text = metadata(method, "AOTI_COMPUTE_CAPABILITY");
    source = "AOTI_COMPUTE_CAPABILITY";
    // AOTInductor writes "None" for a CPU library.
    if (text == "None") text.clear();
  }
  if (text.empty()) return Error::Ok;
  auto archs = parse_cuda_archs(text);
  if (!archs.ok())
    return set_error(Error::InvalidProgram, label + ": method metadata " + source + ": " + last_error_message());
  std::string names;
  for (const CudaArch& arch : *archs) {
    if (cuda_arch_runs_on(arch, device_cc)) return Error::Ok;
    names += (names.empty() ? "" : ", ") + cuda_arch_name(arch);
  }
  const std::string device_arch = "sm_" + std::to_string(device_cc);
  return set_error(Error::NotSupported,
                   label + ": the library was built for " + names + ", this GPU (" + std::string(device_name) +
                       ") is " + device_arch + ". Re-export the model on a " + device_arch +
                       " GPU (Kiln runs GPU code only on the compute capability it was built for, or newer ones "
                       "when it carries plain PTX).");
}

}  // namespace kiln::aoti
