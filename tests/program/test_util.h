// Helpers shared by the program file tests.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace kiln::testing_util {

/// A fresh directory under the test temp dir (left behind for inspection).
inline std::string make_temp_dir() {
  std::string templ = ::testing::TempDir() + "kiln_program_XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return {};
  return templ + "/";
}

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// (i * mul + add) mod 256: the deterministic payloads the golden files hold.
inline std::vector<uint8_t> pattern(size_t n, unsigned mul, unsigned add) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>((i * mul + add) % 256);
  return out;
}

}  // namespace kiln::testing_util
