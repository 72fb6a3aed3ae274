// libFuzzer target for the program reader: arbitrary bytes as a `.kiln`
// program, taken through everything Module::load does short of dlopen —
// header, FlatBuffer verification, decoding, named-data digests, the host and
// CUDA compatibility checks on method metadata, and the ELF reader on each
// method's library bytes.
//
// Input: the program file bytes. If "KILNDATA" occurs after the program
// header, the bytes from there on are an external data file and the program
// is opened from memory files (memfd) with that data file; otherwise it is
// read with ProgramFile::from_bytes. A FlatBuffer digest mismatch would stop
// almost every mutation at the header, so after such a failure the input is
// parsed again with the digest recomputed, to reach the FlatBuffer layer.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "aoti/elf_symbols.h"
#include "aoti/host_compatibility.h"
#include "kiln/program_file.h"
#include "program/file_format.h"
#include "program/sha256.h"

namespace {

namespace pf = kiln::program_format;

// A memory file holding `bytes`, closed on destruction; path() opens it.
class MemoryFile {
 public:
  explicit MemoryFile(std::span<const uint8_t> bytes) : fd_(::memfd_create("kiln-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) std::abort();
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
  }
  ~MemoryFile() { ::close(fd_); }
  std::string path() const { return std::string("/proc/self/fd/").append(std::to_string(fd_)); }

 private:
  int fd_;
};

void require(bool condition) {
  if (!condition) std::abort();  // a reader invariant is broken: report it as a crash
}

// Everything a loaded program offers, read back and cross-checked.
void exercise(const kiln::ProgramFile& program) {
  for (const kiln::MethodInfo& m : program.methods()) {
    require(program.find_method(m.name) == &m);
    for (const auto* list : {&m.inputs, &m.outputs})
      for (const kiln::TensorSpec& t : *list) {
        require(kiln::is_known_dtype(static_cast<int32_t>(t.dtype)));
        for (const kiln::DimSpec& d : t.dims) require(d.size >= 0);
      }
    (void)kiln::aoti::check_host_compatibility(m);
    (void)kiln::aoti::check_cuda_compatibility(m, 90, "cuda:0");
    auto archs = m.metadata.find("cuda_archs");
    if (archs != m.metadata.end()) (void)kiln::aoti::parse_cuda_archs(archs->second);
    if (!m.library_key.empty()) {
      auto bytes = program.read_named_data(m.library_key, /*verify_digest=*/false);
      require(bytes.ok());
      (void)kiln::aoti::read_dynamic_symbols(bytes.value().bytes());
    }
  }
  require(program.find_method("") == nullptr);
  for (const kiln::NamedDataInfo& info : program.named_data()) {
    auto raw = program.read_named_data(info.key, /*verify_digest=*/false);
    require(raw.ok() && raw.value().size() == info.size);
    // Touch every byte so ASan sees a span reaching outside the mapping.
    uint8_t sum = 0;
    for (uint8_t b : raw.value()) sum = static_cast<uint8_t>(sum + b);
    (void)sum;
    if (info.size != 0) require(reinterpret_cast<uintptr_t>(raw.value().data()) % info.alignment == 0);
    auto checked = program.read_named_data(info.key, /*verify_digest=*/true);
    require(checked.ok() == (kiln::sha256(raw.value().bytes()) == info.sha256));
  }
  require(program.read_named_data("no such key").error() == kiln::Error::NotFound);
}

void parse(std::span<const uint8_t> program_bytes, std::span<const uint8_t> data_bytes, bool has_data) {
  if (!has_data) {
    auto program = kiln::ProgramFile::from_bytes(program_bytes);
    if (program.ok()) exercise(*program.value());
    else require(!kiln::last_error_message().empty());
    return;
  }
  MemoryFile program_file(program_bytes), data_file(data_bytes);
  auto program = kiln::ProgramFile::open(program_file.path(), {data_file.path()});
  if (program.ok()) exercise(*program.value());
  else require(!kiln::last_error_message().empty());
}

// The program with its header's FlatBuffer digest recomputed, or empty when
// the header does not locate a FlatBuffer inside the bytes.
std::vector<uint8_t> with_fixed_digest(std::span<const uint8_t> bytes) {
  if (bytes.size() < pf::kProgramHeaderSize) return {};
  const pf::ProgramHeader h = pf::decode_program_header(bytes.data());
  uint64_t end = 0;
  if (!pf::checked_add(h.flatbuffer_offset, h.flatbuffer_size, &end) || end > bytes.size()) return {};
  const kiln::Sha256Digest digest =
      kiln::sha256(bytes.subspan(static_cast<size_t>(h.flatbuffer_offset), static_cast<size_t>(h.flatbuffer_size)));
  if (digest == h.flatbuffer_sha256) return {};
  std::vector<uint8_t> fixed(bytes.begin(), bytes.end());
  std::copy(digest.begin(), digest.end(), fixed.begin() + pf::kOffFlatbufferSha256);
  return fixed;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Refusals are expected by the thousand; keep the fuzzer's output readable.
  setenv("KILN_LOG_LEVEL", "off", 0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> all(data, size);
  std::span<const uint8_t> program = all, external;
  bool has_data = false;
  if (size > pf::kProgramHeaderSize) {
    auto it = std::search(all.begin() + pf::kProgramHeaderSize, all.end(), pf::kDataMagic.begin(), pf::kDataMagic.end());
    if (it != all.end()) {
      const auto split = static_cast<size_t>(it - all.begin());
      program = all.first(split);
      external = all.subspan(split);
      has_data = true;
    }
  }
  parse(program, external, has_data);
  const std::vector<uint8_t> fixed = with_fixed_digest(program);
  if (!fixed.empty()) parse(fixed, external, has_data);
  return 0;
}
