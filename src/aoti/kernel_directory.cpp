#include "aoti/kernel_directory.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace kiln::aoti {

Result<std::unique_ptr<KernelDirectory>> KernelDirectory::create(const ProgramFile& program, const MethodInfo& method) {
  auto it = method.metadata.find(kKernelFilesKey);
  if (it == method.metadata.end() || it->second.empty()) return std::unique_ptr<KernelDirectory>();
  const std::string label = "method '" + method.name + "'";
  std::unique_ptr<KernelDirectory> dir(new KernelDirectory());
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln_kernels_XXXXXX";
  if (!::mkdtemp(templ.data()))
    return set_error(Error::IoError, label + ": cannot create a directory for its kernel files (" + templ +
                                         "): " + std::strerror(errno));
  dir->path_ = templ;
  std::istringstream keys(it->second);
  for (std::string key; std::getline(keys, key, ',');) {
    const size_t slash = key.rfind('/');
    const std::string name = slash == std::string::npos ? std::string() : key.substr(slash + 1);
    if (name.empty() || name == "." || name == "..")
      return set_error(Error::InvalidProgram, label + ": kernel file key '" + key + "' does not end in a file name");
    KILN_ASSIGN_OR_RETURN(NamedBytes bytes, program.read_named_data(key, /*verify_digest=*/true));
    const std::string path = dir->path_ + "/" + name;
    std::FILE* f = std::fopen(path.c_str(), "wbx");  // x: never follow or reuse an existing file
    if (!f) return set_error(Error::IoError, label + ": cannot create '" + path + "': " + std::strerror(errno));
    dir->files_.push_back(path);
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    if (std::fclose(f) != 0 || !ok) return set_error(Error::IoError, label + ": writing '" + path + "' failed");
  }
  return dir;
}

KernelDirectory::~KernelDirectory() {
  for (const std::string& file : files_) ::unlink(file.c_str());
  if (!path_.empty()) ::rmdir(path_.c_str());
}

}  // namespace kiln::aoti
