// TempDir: the one way C++ tests get a place for files. A fresh directory
// under $TMPDIR (else /tmp), removed with everything in it when the object
// goes out of scope, also when an ASSERT_* returns from the test early, so a
// test run leaves nothing behind (scripts/test.sh checks that it does not).
//
// Movable, not copyable. Not thread-safe to create and destroy concurrently
// with the same object; distinct objects are independent.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace kiln::testing_util {

class TempDir {
 public:
  /// Creates "<TMPDIR>/<prefix>-XXXXXX" (mkdtemp: unique, mode 0700). A
  /// failure is reported as a test failure and leaves path() empty.
  explicit TempDir(std::string_view prefix = "kiln-test") {
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec) {
      ADD_FAILURE() << "no temporary directory: " << ec.message();
      return;
    }
    std::string templ = (base / (std::string(prefix) + "-XXXXXX")).string();
    if (::mkdtemp(templ.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp(" << templ << ") failed";
      return;
    }
    path_ = std::move(templ);
  }
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  TempDir& operator=(TempDir&& other) noexcept {
    if (this != &other) {
      remove();
      path_ = std::exchange(other.path_, {});
    }
    return *this;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() { remove(); }

  /// The directory, without a trailing slash.
  const std::string& path() const { return path_; }
  /// `name` inside the directory.
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  void remove() noexcept {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    path_.clear();
  }

  std::string path_;
};

}  // namespace kiln::testing_util
