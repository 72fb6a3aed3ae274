#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <vector>

#include "aoti/elf_symbols.h"

namespace kiln::aoti {
namespace {

std::vector<uint8_t> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(ElfSymbols, ListsShimImportsAndUniqueDefinitions) {
  auto bytes = read_file(KILN_FAKE_MODEL_PATH);
  ASSERT_FALSE(bytes.empty());
  auto symbols = read_dynamic_symbols(bytes);
  ASSERT_TRUE(symbols.ok()) << last_error_message();
  EXPECT_TRUE(contains(symbols->undefined, "aoti_torch_empty_strided"));
  EXPECT_TRUE(contains(symbols->undefined, "aoti_torch_get_data_ptr"));
  EXPECT_FALSE(contains(symbols->undefined, "AOTInductorModelContainerRun"));  // defined, not imported
  EXPECT_FALSE(symbols->unique_binding_offsets.empty());
}

TEST(ElfSymbols, RejectsMalformedBytesWithoutCrashing) {
  auto bytes = read_file(KILN_FAKE_MODEL_PATH);
  ASSERT_GT(bytes.size(), 64u);
  EXPECT_EQ(read_dynamic_symbols(std::span<const uint8_t>(bytes.data(), 10)).error(), Error::InvalidProgram);
  std::vector<uint8_t> bad_magic = bytes;
  bad_magic[1] = 'X';
  EXPECT_EQ(read_dynamic_symbols(bad_magic).error(), Error::InvalidProgram);
  // Section headers pointing past the end.
  std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + bytes.size() / 2);
  EXPECT_EQ(read_dynamic_symbols(truncated).error(), Error::InvalidProgram);
  // Every single-byte corruption of the ELF header must be handled.
  for (size_t i = 0; i < 64; ++i) {
    std::vector<uint8_t> corrupt = bytes;
    corrupt[i] ^= 0xFF;
    (void)read_dynamic_symbols(corrupt);  // must return, never crash
  }
}

}  // namespace
}  // namespace kiln::aoti
