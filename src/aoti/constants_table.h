// The weights table the exporter records for a method (metadata key
// "aoti_constants", written by python/kiln/exporter/constants_table.py): for
// every constant the library reads from its weights blob, its name, FQN,
// tensor geometry, where its bytes lie in the blob and their SHA-256. With it
// Kiln places the weights itself (device_weights.h) instead of letting the
// library copy the blob.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::aoti {

inline constexpr std::string_view kConstantsMetadataKey = "aoti_constants";

struct ConstantEntry {
  std::string name;          // the library's constant name (its constants map key)
  std::string original_fqn;  // e.g. "layers.0.attn.q_proj.weight"; may be empty
  DType dtype = DType::Float32;
  std::string type;          // Parameter, Buffer, TensorConstant, Unknown
  int64_t storage_offset = 0;  // elements
  uint64_t data_size = 0;      // bytes of its storage in the blob
  uint64_t blob_offset = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  std::string sha256;  // hex digest of its data_size bytes

  /// Parameters and tensor constants are never written by the model.
  bool read_only() const { return type == "Parameter" || type == "TensorConstant"; }
};

/// Parses the metadata value. InvalidProgram naming the line when it is
/// malformed, when an entry's view reaches past its storage, or when entries
/// fall outside a blob of `blob_size` bytes.
Result<std::vector<ConstantEntry>> parse_constants_table(std::string_view text, uint64_t blob_size);

}  // namespace kiln::aoti
