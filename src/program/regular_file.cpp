#include "program/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "program/file_type.h"

namespace kiln {

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(std::exchange(other.size_, 0)), label_(std::move(other.label_)) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    size_ = std::exchange(other.size_, 0);
    label_ = std::move(other.label_);
  }
  return *this;
}

RegularFile::~RegularFile() { close(); }

void RegularFile::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<RegularFile> RegularFile::open(const std::string& path, const std::string& what) {
  RegularFile file;
  file.label_ = what + " '" + path + "'";
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  // O_NOCTTY: a terminal given as a path must not become the controlling one.
  file.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (file.fd_ < 0) {
    const int err = errno;
    // Some kinds cannot be opened at all (a socket: ENXIO); say what it is.
    struct stat st {};
    if (err != ENOENT && ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      return set_error(Error::IoError, file.label_ + " is " + file_type_name(st.st_mode) + ", not a regular file");
    return set_error(err == ENOENT ? Error::NotFound : Error::IoError,
                     file.label_ + ": cannot open: " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(file.fd_, &st) != 0) {
    const int err = errno;
    return set_error(Error::IoError, file.label_ + ": fstat failed: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode))
    return set_error(Error::IoError, file.label_ + " is " + file_type_name(st.st_mode) + ", not a regular file");
  // Regular files never block; the flag only mattered for the open itself.
  const int flags = ::fcntl(file.fd_, F_GETFL);
  if (flags < 0 || ::fcntl(file.fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    return set_error(Error::IoError, file.label_ + ": fcntl failed: " + std::strerror(err));
  }
  file.size_ = static_cast<uint64_t>(st.st_size);
  return file;
}

Error RegularFile::read_exact(uint64_t offset, std::span<uint8_t> out) const {
  const auto range = [&] {
    return "bytes " + std::to_string(offset) + ".." + std::to_string(offset + out.size());
  };
  if (fd_ < 0) return set_error(Error::InvalidState, label_ + ": reading " + range() + " of a closed file");
  if (offset > size_ || out.size() > size_ - offset)
    return set_error(Error::IoError, label_ + ": " + range() + " lie past its end (" + std::to_string(size_) +
                                         " bytes when it was opened)");
  size_t done = 0;
  while (done < out.size()) {
    // One read(2) moves at most about 2 GiB on Linux; larger requests loop.
    const size_t chunk = std::min<size_t>(out.size() - done, size_t{1} << 30);
    const ssize_t n = ::pread(fd_, out.data() + done, chunk, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      return set_error(Error::IoError, label_ + ": reading " + range() + " failed: " + std::strerror(err));
    }
    if (n == 0) {
      struct stat st {};
      const std::string now =
          ::fstat(fd_, &st) == 0 ? " (it is " + std::to_string(st.st_size) + " bytes now)" : std::string();
      return set_error(Error::IoError, label_ + " ends at byte " + std::to_string(offset + done) + " while reading " +
                                           range() + ": it was truncated after it was opened (" +
                                           std::to_string(size_) + " bytes then)" + now);
    }
    done += static_cast<size_t>(n);
  }
  return Error::Ok;
}

Result<PrivateBuffer> RegularFile::read(uint64_t offset, uint64_t size) const {
  KILN_ASSIGN_OR_RETURN(PrivateBuffer buffer, PrivateBuffer::allocate(size, label_));
  KILN_RETURN_IF_ERROR(read_exact(offset, {buffer.mutable_data(), static_cast<size_t>(size)}));
  return buffer;
}

Result<PrivateBuffer> RegularFile::read_all(uint64_t max_size) const {
  if (size_ > max_size)
    return set_error(Error::InvalidArgument, label_ + " is " + std::to_string(size_) + " bytes, more than the " +
                                                 std::to_string(max_size) + " bytes such a file may have");
  return read(0, size_);
}

}  // namespace kiln
