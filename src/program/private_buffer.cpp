#include "program/private_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace kiln {

namespace {
constexpr uint64_t kPage = 4096;
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

PrivateBuffer::PrivateBuffer(PrivateBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

PrivateBuffer& PrivateBuffer::operator=(PrivateBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

PrivateBuffer::~PrivateBuffer() { release(); }

void PrivateBuffer::release() noexcept {
  if (data_ != nullptr && mapped_ > 0) ::munmap(data_, mapped_);
  else std::free(data_);
  data_ = nullptr;
  size_ = 0;
  mapped_ = 0;
}

Result<PrivateBuffer> PrivateBuffer::allocate(uint64_t size, std::string_view what) {
  PrivateBuffer out;
  if (size == 0) return out;
  if (size > UINT64_MAX - kPage || (size + kPage - 1) / kPage * kPage > SIZE_MAX)
    return set_error(Error::OutOfMemory, std::string(what) + ": " + std::to_string(size) +
                                             " bytes do not fit in this process's address space");
  const size_t mapped = static_cast<size_t>((size + kPage - 1) / kPage * kPage);
  if (mapped < kHugePage) {
    // Small blobs (libraries, small weights) come from the heap: a mapping
    // of their own per read would churn the process's memory map.
    void* p = std::aligned_alloc(kPage, mapped);
    if (p == nullptr)
      return set_error(Error::OutOfMemory, std::string(what) + ": cannot allocate " + std::to_string(size) +
                                               " bytes of private memory");
    std::memset(p, 0, mapped);
    out.data_ = static_cast<uint8_t*>(p);
    out.size_ = size;
    out.mapped_ = 0;  // heap memory: freed with std::free
    return out;
  }
  // Large ones are anonymous private memory of their own, returned to the
  // system as a whole when freed (large weights must not stay in a heap),
  // starting on a huge-page boundary and asking for huge pages: filling them
  // then takes 512 times fewer page faults, and the kernels that read weights
  // from them fewer TLB misses.
  const size_t reserve = mapped + kHugePage;
  void* p = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return set_error(Error::OutOfMemory, std::string(what) + ": cannot allocate " + std::to_string(size) +
                                             " bytes of private memory: " + std::strerror(errno));
  auto* base = static_cast<uint8_t*>(p);
  const uintptr_t raw = reinterpret_cast<uintptr_t>(base);
  auto* aligned = reinterpret_cast<uint8_t*>((raw + kHugePage - 1) / kHugePage * kHugePage);
  if (aligned > base) ::munmap(base, static_cast<size_t>(aligned - base));
  const size_t tail = reserve - static_cast<size_t>(aligned - base) - mapped;
  if (tail > 0) ::munmap(aligned + mapped, tail);
  base = aligned;
  (void)::madvise(base, mapped, MADV_HUGEPAGE);  // advice only: without THP, small pages
  out.data_ = base;
  out.size_ = size;
  out.mapped_ = mapped;
  return out;
}

Result<PrivateBuffer> PrivateBuffer::copy_of(std::span<const uint8_t> bytes, std::string_view what) {
  KILN_ASSIGN_OR_RETURN(PrivateBuffer out, allocate(bytes.size(), what));
  if (!bytes.empty()) std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace kiln
