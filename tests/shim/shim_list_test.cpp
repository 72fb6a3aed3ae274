// The lists src/shims/{common,cpu}/shims.txt are the one record of the shims
// libkiln implements: every name in them must resolve in a binary that links
// the runtime, and the generated kiln::aoti::kSupportedShims must be exactly
// those lists. (That libkiln.so exports nothing unlisted is checked by the
// shim_exports_match_list ctest.)
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "shims/supported_shims.h"

namespace {

std::vector<std::string> read_list() {
  std::vector<std::string> names;
  std::string files = KILN_SHIM_LIST_FILES;
  for (size_t start = 0; start <= files.size();) {
    const size_t bar = std::min(files.find('|', start), files.size());
    const std::string file = files.substr(start, bar - start);
    start = bar + 1;
    std::ifstream in(file);
    EXPECT_TRUE(in.good()) << "cannot open " << file;
    std::string line;
    while (std::getline(in, line)) {
      const auto b = line.find_first_not_of(" \t\r");
      if (b == std::string::npos || line[b] == '#') continue;
      const auto e = line.find_last_not_of(" \t\r");
      names.push_back(line.substr(b, e - b + 1));
    }
  }
  return names;
}

TEST(SupportedShims, ListIsWellFormedAndUnique) {
  const auto names = read_list();
  ASSERT_GT(names.size(), 50u);
  std::set<std::string> seen;
  for (const auto& n : names) {
    EXPECT_EQ(n.rfind("aoti_torch_", 0), 0u) << n;
    EXPECT_TRUE(seen.insert(n).second) << "duplicate " << n;
  }
  // Custom ops that need libtorch are refused at export, never half-supported.
  EXPECT_EQ(seen.count("aoti_torch_proxy_executor_call_function"), 0u);
}

TEST(SupportedShims, GeneratedArrayMatchesFile) {
  const auto names = read_list();
  ASSERT_EQ(names.size(), kiln::aoti::kSupportedShims.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(names[i], kiln::aoti::kSupportedShims[i]);
}

TEST(SupportedShims, EveryListedNameResolves) {
  // The test executable exports its symbols (ENABLE_EXPORTS) and links the
  // whole runtime archive, like a host a model library resolves against.
  void* self = dlopen(nullptr, RTLD_NOW);
  ASSERT_NE(self, nullptr);
  for (const auto& n : read_list()) EXPECT_NE(dlsym(self, n.c_str()), nullptr) << n << " is listed but not defined";
  dlclose(self);
}

}  // namespace
