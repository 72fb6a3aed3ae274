#include "program/sealed_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "core/settings.h"
#include "program/write_all.h"

namespace kiln {
namespace {

// The sealed file must hold exactly the bytes: the check closes the window
// between writing and sealing.
Error check_sealed_copy(int fd, std::span<const uint8_t> bytes, std::string_view what) {
  const auto refuse = [&](const char* problem) {
    return set_error(Error::IntegrityError, std::string(what) + ": its sealed in-memory copy " + problem);
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != bytes.size()) return refuse("has the wrong size");
  std::vector<uint8_t> chunk(std::min<size_t>(bytes.size(), size_t{1} << 20));
  for (size_t done = 0; done < bytes.size();) {
    const size_t n = std::min(chunk.size(), bytes.size() - done);
    const ssize_t got = ::pread(fd, chunk.data(), n, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0 || std::memcmp(chunk.data(), bytes.data() + done, static_cast<size_t>(got)) != 0)
      return refuse("does not hold the checked bytes");
    done += static_cast<size_t>(got);
  }
  return Error::Ok;
}

}  // namespace

Result<SealedFile> SealedFile::create(std::span<const uint8_t> bytes, const char* name, std::string_view what) {
  if (process_settings().get_bool(SettingId::DisableMemfd))
    return set_error(Error::NotSupported, "in-memory files are disabled by setting disable_memfd");
  const int fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    const Error code = errno == ENOSYS || errno == EPERM || errno == EINVAL ? Error::NotSupported : Error::IoError;
    return set_error(code, std::string("memfd_create: ") + std::strerror(errno));
  }
  SealedFile file(fd);
  if (const int err = write_all(fd, bytes); err != 0)
    return set_error(Error::IoError, "writing " + std::string(what) + ": " + std::strerror(err));
  if (::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    return set_error(errno == EINVAL ? Error::NotSupported : Error::IoError,
                     std::string(what) + ": sealing its memfd failed: " + std::strerror(errno));
  KILN_RETURN_IF_ERROR(check_sealed_copy(fd, bytes, what));
  return file;
}

SealedFile::SealedFile(SealedFile&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

SealedFile& SealedFile::operator=(SealedFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

SealedFile::~SealedFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string SealedFile::path() const { return "/proc/self/fd/" + std::to_string(fd_); }

int SealedFile::release() noexcept { return std::exchange(fd_, -1); }

}  // namespace kiln
