#include "program/atomic_file.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "program/file_type.h"
#include "program/write_all.h"

namespace kiln {

namespace {

// Six characters for a temporary name, as mkstemp draws them. getrandom is
// not needed for safety (O_EXCL never opens an existing file, and a taken
// name is retried), only to make collisions between processes unlikely; the
// clock and a counter stand in if it is unavailable.
std::string random_suffix() {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  static std::atomic<uint64_t> counter{0};
  uint64_t bits = 0;
  if (::getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(bits))) {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    bits = static_cast<uint64_t>(now.tv_nsec) * 0x9E3779B97F4A7C15ull ^ counter.fetch_add(1) ^
           (static_cast<uint64_t>(::getpid()) << 32);
  }
  std::string out(6, 'X');
  for (char& c : out) {
    c = kAlphabet[bits % (sizeof(kAlphabet) - 1)];
    bits /= sizeof(kAlphabet) - 1;
  }
  return out;
}

Error io_error(const std::string& target, const std::string& what, int err) {
  return set_error(Error::IoError, "writing '" + target + "' failed: " + what + ": " + std::strerror(err));
}

// A rename replaces whatever the name holds: a FIFO, a device node (as root,
// /dev/null itself) or a directory given as the output must be refused, not
// turned into a regular file.
Error refuse_unless_regular(const std::string& target, const std::string& final_path) {
  struct stat st {};
  if (::stat(final_path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return Error::Ok;  // absent, or a file
  return set_error(Error::IoError, "writing '" + target + "': it is " + file_type_name(st.st_mode) +
                                       ", which Kiln does not replace");
}

}  // namespace

Result<AtomicFile> AtomicFile::create(const std::string& target, std::optional<mode_t> mode) {
  if (target.empty()) return set_error(Error::InvalidArgument, "writing a file: the path is empty");
  AtomicFile file;
  file.target_ = target;
  file.final_ = target;
  // Writing through a link used to write the file it names; renaming over the
  // link would replace the link instead.
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    if (char* resolved = ::realpath(target.c_str(), nullptr)) {
      file.final_ = resolved;
      ::free(resolved);
    }
  }
  KILN_RETURN_IF_ERROR(refuse_unless_regular(target, file.final_));
  std::optional<mode_t> keep = mode;
  if (!keep && ::stat(file.final_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) keep = st.st_mode & 07777;

  const size_t slash = file.final_.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : file.final_.substr(0, slash + 1);
  // Clipped so that "." + base + ".tmp-XXXXXX" still fits NAME_MAX.
  const std::string base =
      file.final_.substr(slash == std::string::npos ? 0 : slash + 1).substr(0, NAME_MAX - 16);
  int err = 0;
  for (int attempt = 0; attempt < 100 && file.fd_ < 0; ++attempt) {
    std::string temp = dir + "." + base + ".tmp-" + random_suffix();
    // 0666 through the umask: exactly the mode a new target would get from
    // open/fopen, default ACLs of the directory included.
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      file.fd_ = fd;
      file.temp_ = std::move(temp);
    } else if ((err = errno) != EEXIST) {
      break;
    }
  }
  if (file.fd_ < 0) return io_error(target, "cannot create a temporary file in its directory", err);
  if (keep && ::fchmod(file.fd_, *keep) != 0) {
    err = errno;
    file.discard();
    return io_error(target, "cannot set the temporary file's mode", err);
  }
  return file;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : target_(std::move(other.target_)),
      final_(std::move(other.final_)),
      temp_(std::exchange(other.temp_, {})),
      fd_(std::exchange(other.fd_, -1)),
      failed_(other.failed_) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    target_ = std::move(other.target_);
    final_ = std::move(other.final_);
    temp_ = std::exchange(other.temp_, {});
    fd_ = std::exchange(other.fd_, -1);
    failed_ = other.failed_;
  }
  return *this;
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

Error AtomicFile::write(std::span<const uint8_t> bytes) {
  if (fd_ < 0)
    return set_error(Error::InvalidState, "writing '" + target_ + "': the temporary file is already closed");
  if (const int err = write_all(fd_, bytes); err != 0) {
    failed_ = true;
    return io_error(target_, "write", err);
  }
  return Error::Ok;
}

Error AtomicFile::sync() {
  if (temp_.empty()) return set_error(Error::InvalidState, "writing '" + target_ + "': nothing left to sync");
  if (fd_ < 0) return Error::Ok;
  const bool synced = ::fsync(fd_) == 0;
  const int err = errno;
  const bool closed = ::close(fd_) == 0;
  fd_ = -1;
  if (!synced || !closed) {
    const int close_err = errno;
    discard();
    return io_error(target_, synced ? "close" : "fsync", synced ? close_err : err);
  }
  return Error::Ok;
}

Error AtomicFile::commit() {
  if (failed_) {
    discard();
    return set_error(Error::IoError,
                     "writing '" + target_ + "' failed: an earlier write failed, nothing replaced");
  }
  KILN_RETURN_IF_ERROR(sync());
  // Checked again right before the rename, which would replace anything.
  if (const Error refused = refuse_unless_regular(target_, final_); refused != Error::Ok) {
    discard();
    return refused;
  }
  if (::rename(temp_.c_str(), final_.c_str()) != 0) {
    const int err = errno;
    discard();
    return io_error(target_, "cannot rename the temporary file over it", err);
  }
  temp_.clear();
  // The directory entry itself reaches the disk with the directory. The new
  // file is in place whatever this returns, so a failure is not reported.
  const size_t slash = final_.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : final_.substr(0, slash);
  if (const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    (void)::fsync(dir_fd);
    ::close(dir_fd);
  }
  return Error::Ok;
}

Error replace_file_atomically(const std::string& target,
                              std::initializer_list<std::span<const uint8_t>> parts,
                              std::optional<mode_t> mode) {
  KILN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::create(target, mode));
  for (auto part : parts) KILN_RETURN_IF_ERROR(file.write(part));
  return file.commit();
}

}  // namespace kiln
