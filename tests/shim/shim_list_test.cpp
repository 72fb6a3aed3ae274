// python/kiln/supported_shims.txt is the one list of implemented shims: every
// name in it must resolve in a binary that links the runtime, and the
// generated kiln::aoti::kSupportedShims must be exactly that list. (That
// libkiln.so exports nothing unlisted is checked by the shim_exports ctest.)
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "aoti/supported_shims.h"

namespace {

std::vector<std::string> read_list() {
  std::ifstream in(KILN_SUPPORTED_SHIMS_FILE);
  EXPECT_TRUE(in.good()) << "cannot open " << KILN_SUPPORTED_SHIMS_FILE;
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    const auto e = line.find_last_not_of(" \t\r");
    names.push_back(line.substr(b, e - b + 1));
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
