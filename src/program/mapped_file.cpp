#include "program/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace kiln {

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() noexcept {
  if (data_ == nullptr) return;
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_));
  else std::free(const_cast<uint8_t*>(data_));
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
}

Result<MappedFile> MappedFile::map(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return set_error(err == ENOENT ? Error::NotFound : Error::IoError,
                     what + " '" + path + "': cannot open: " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return set_error(Error::IoError, what + " '" + path + "': fstat failed: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return set_error(Error::IoError, what + " '" + path + "' is not a regular file");
  }
  MappedFile out;
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return set_error(Error::IoError, what + " '" + path + "': mmap failed: " + std::strerror(err));
    }
    out.data_ = static_cast<const uint8_t*>(p);
    out.size_ = static_cast<uint64_t>(st.st_size);
    out.mapped_ = true;
  }
  // The mapping keeps the file's pages reachable after the descriptor is gone.
  ::close(fd);
  return out;
}

Result<MappedFile> MappedFile::copy_of(std::span<const uint8_t> bytes) {
  MappedFile out;
  if (bytes.empty()) return out;
  constexpr size_t kPage = 4096;
  const size_t rounded = (bytes.size() + kPage - 1) / kPage * kPage;
  void* p = std::aligned_alloc(kPage, rounded);
  if (p == nullptr)
    return set_error(Error::OutOfMemory, "copying a " + std::to_string(bytes.size()) + "-byte program failed");
  std::memcpy(p, bytes.data(), bytes.size());
  out.data_ = static_cast<const uint8_t*>(p);
  out.size_ = bytes.size();
  out.mapped_ = false;
  return out;
}

}  // namespace kiln
