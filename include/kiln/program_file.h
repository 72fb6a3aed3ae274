// ProgramFile: a validated, memory-mapped `.kiln` program.
//
// open() maps the file (and any external data files), checks the header
// (magic, format version, sizes), verifies the FlatBuffer and every segment's
// bounds, alignment and non-overlap before anything else looks at it. Named
// data (libraries, weights) is returned as spans into the mapping: no copy;
// weights segments are page aligned so a mapped blob can be used in place.
//
// Ownership: a ProgramFile owns its mappings; spans it returns are valid while
// it lives. Shared via std::shared_ptr by Module and every loaded method.
// Thread-safe after open() (all accessors are const; digest checks are cached
// under a lock).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
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
};

/// The signature trailer of a signed program (docs/program-format.md,
/// "Signatures"), as found in the file: open() checks its structure only;
/// kiln::verify_program_signature (kiln/signing.h) checks what it says.
struct ProgramSignature {
  uint32_t algorithm = 0;  ///< 1: Ed25519
  std::array<uint8_t, 32> public_key{};
  std::array<uint8_t, 64> signature{};
};

class KILN_API ProgramFile {
 public:
  /// Maps and validates `path`. `data_files` are external data files in the
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

  /// Bytes of a named entry, in place in the mapping. With verify_digest the
  /// SHA-256 is checked first (once; the result is cached): IntegrityError on
  /// mismatch. NotFound for an unknown key.
  Result<std::span<const uint8_t>> named_data_bytes(std::string_view key, bool verify_digest = true) const;

  /// Total bytes of the mapped program file.
  uint64_t file_size() const noexcept;

  /// The signature trailer, or nullptr when the program is not signed.
  const ProgramSignature* signature() const noexcept;
  /// The header bytes ([0, header_size)): what a signature covers.
  std::span<const uint8_t> header_bytes() const noexcept;
  /// The program without its signature trailer (header to the end of the
  /// last segment); the whole file when it is not signed.
  std::span<const uint8_t> content_bytes() const noexcept;

  struct Impl;

 private:
  explicit ProgramFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
