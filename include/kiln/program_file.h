// ProgramFile: a validated `.kiln` program, read into private memory.
//
// open() reads the header and FlatBuffer (and each external data file's
// header) into memory of this process, checks the header (magic, format
// version, sizes), verifies the FlatBuffer, every segment's bounds, alignment
// and non-overlap, and that every byte of the files outside the header, the
// FlatBuffer, the segments and the signature trailer is the zero padding the
// writer writes, before anything else looks at it. Named data (libraries,
// weights) is read with pread into private memory when it is first asked for
// and digest-checked on that copy: what was checked is what is used, and a file
// rewritten or truncated afterwards cannot change it or crash the process
// (docs/program-format.md, "What is verified is what runs").
//
// Ownership: a ProgramFile owns its open files and the header copies; the
// bytes of named entries are shared (NamedBytes) and live as long as any
// holder. Shared via std::shared_ptr by Module and every loaded method.
// Thread-safe after open() (all accessors are const; reads and digest checks
// of one entry are serialised under its lock).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/export.h"

namespace kiln {

/// Current `.kiln` format version written by this build; readers accept
/// versions in [kMinProgramVersion, kProgramVersion].
inline constexpr uint32_t kProgramVersion = 1;
inline constexpr uint32_t kMinProgramVersion = 1;

/// One dimension of an input/output. Static: size >= 0, dynamic = false.
/// Dynamic: size is the example size seen at export, [min, max] the bounds
/// (max = -1: unbounded), name the symbol torch.export gave it ("s0", "batch").
struct DimSpec {
  int64_t size = 0;
  bool dynamic = false;
  int64_t min = 0;
  int64_t max = -1;
  std::string name;
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<DimSpec> dims;
  /// Inputs: the layout the method's compiled code reads this input in, as
  /// its dimensions from outermost to innermost of a dense tensor ({0, 2, 3,
  /// 1}: channels_last). Empty: row-major. Otherwise a permutation of
  /// [0, rank) (ProgramFile checks). execute() copies an input with other
  /// strides into this layout before any kernel runs. (The `{}` keeps
  /// aggregate initialisers that stop at `dims` free of
  /// -Wmissing-field-initializers.)
  std::vector<uint8_t> dim_order{};
};

/// Everything the program file says about one method.
struct MethodInfo {
  std::string name;
  std::string backend;  ///< e.g. "aoti"
  std::string device;   ///< "cpu", "cuda"
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::map<std::string, std::string> compile_specs;
  /// torch_version, cpu_isa, cuda_archs, compiler, glibc_required, ...
  std::map<std::string, std::string> metadata;
  std::string library_key;  ///< named-data key of the compiled shared library
  std::string weights_key;  ///< named-data key of the weights blob ("" if none)
};

struct NamedDataInfo {
  std::string key;
  uint64_t size = 0;
  uint64_t alignment = 0;
  std::array<uint8_t, 32> sha256{};
  /// -1: inside the program file; otherwise index into the external data files.
  int32_t external_file = -1;
  /// Where the bytes start in that file (from its first byte).
  uint64_t file_offset = 0;
};

/// The signature trailer of a signed program (docs/program-format.md,
/// "Signatures"), as found in the file: open() checks its structure only;
/// kiln::verify_program_signature (kiln/signing.h) checks what it says.
struct ProgramSignature {
  uint32_t algorithm = 0;  ///< 1: Ed25519
  std::array<uint8_t, 32> public_key{};
  std::array<uint8_t, 64> signature{};
};

/// The bytes of one named entry (or of the whole program, read_content()) in
/// memory private to this process. Copies share the bytes; they live as long
/// as any copy (or anything holding owner()) does.
class KILN_API NamedBytes {
 public:
  NamedBytes() = default;
  NamedBytes(std::shared_ptr<const void> owner, std::span<const uint8_t> bytes)
      : owner_(std::move(owner)), bytes_(bytes) {}
  std::span<const uint8_t> bytes() const noexcept { return bytes_; }
  const uint8_t* data() const noexcept { return bytes_.data(); }
  size_t size() const noexcept { return bytes_.size(); }
  auto begin() const noexcept { return bytes_.begin(); }
  auto end() const noexcept { return bytes_.end(); }
  /// What keeps the bytes alive; a tensor viewing them holds it in its deleter.
  const std::shared_ptr<const void>& owner() const noexcept { return owner_; }

 private:
  std::shared_ptr<const void> owner_;
  std::span<const uint8_t> bytes_;
};

class KILN_API ProgramFile {
 public:
  /// Opens and validates `path`. `data_files` are external data files in the
  /// order the program names them (weights saved outside the program).
  /// InvalidProgram/IoError/NotFound with a message naming the problem.
  static Result<std::shared_ptr<const ProgramFile>> open(const std::string& path,
                                                         const std::vector<std::string>& data_files = {});
  /// Validates a program held in memory (copied). For tests and fuzzing.
  static Result<std::shared_ptr<const ProgramFile>> from_bytes(std::span<const uint8_t> bytes);

  ~ProgramFile();

  uint32_t format_version() const noexcept;
  const std::vector<MethodInfo>& methods() const noexcept;
  /// nullptr if there is no method of that name.
  const MethodInfo* find_method(std::string_view name) const noexcept;
  const std::map<std::string, std::string>& metadata() const noexcept;
  const std::vector<NamedDataInfo>& named_data() const noexcept;
  /// Names of external data files the program expects, in order.
  const std::vector<std::string>& external_file_names() const noexcept;

  /// The bytes of a named entry, read into private memory on first use (a
  /// live copy is shared by later calls). With verify_digest the SHA-256 of
  /// that copy is checked (once per copy): IntegrityError on mismatch.
  /// NotFound for an unknown key; IoError naming the file when it was
  /// truncated since open().
  Result<NamedBytes> read_named_data(std::string_view key, bool verify_digest = true) const;

  /// Fills `out` with the bytes of a named entry from `offset`, straight from
  /// its file with pread and checking no digest: for a caller that copies an
  /// entry elsewhere without keeping a private copy (CUDA weights uploaded
  /// with aoti.verify_weights off). IntegrityError once digests are required
  /// (require_digests): unchecked bytes are never used then. InvalidArgument
  /// for a range outside the entry, IoError when the file was truncated.
  /// Thread-safe.
  Error read_named_range(std::string_view key, uint64_t offset, std::span<uint8_t> out) const;

  /// From now on every read_named_data checks the digest, whatever its
  /// caller asks: set once a signature policy accepted the program, so no
  /// option can have bytes used that the signature does not vouch for.
  void require_digests() const noexcept;
  bool digests_required() const noexcept;

  /// Total bytes of the program file when it was opened.
  uint64_t file_size() const noexcept;

  /// The signature trailer, or nullptr when the program is not signed.
  const ProgramSignature* signature() const noexcept;
  /// The header bytes ([0, header_size)): what a signature covers.
  std::span<const uint8_t> header_bytes() const noexcept;
  /// The program without its signature trailer (header to the end of the
  /// last segment; the whole file when it is not signed), read once into
  /// private memory. Its header and FlatBuffer are checked to be the ones
  /// open() validated and every segment's digest is checked on this copy, so
  /// a signer signs exactly the bytes it writes out.
  Result<NamedBytes> read_content() const;

  struct Impl;

 private:
  explicit ProgramFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
