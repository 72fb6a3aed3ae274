// Layout of the signature trailer of a signed `.kiln` program and the message
// a signature covers. Shared by the reader (program_file.cpp, which only
// decodes the trailer) and the signer/verifier (signing.cpp, which needs
// libsodium). The byte layout is documented in docs/program-format.md,
// section "Signatures".
//
// Why a trailer: the signature covers the header, and the header's FlatBuffer
// digest covers every named data digest, so the header must not change when a
// file is signed. The trailer therefore sits after the last segment, where the
// header's segment_base_offset + segment_data_size says the program ends; a
// reader finds it there by its magic, so the header needs no flag.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "program/file_format.h"

namespace kiln::program_format {

/// First 8 bytes of the trailer.
inline constexpr std::array<uint8_t, 8> kSignatureMagic = {'K', 'I', 'L', 'N', 'S', 'I', 'G', '1'};
/// Size of the trailer. A reader refuses any other size: bytes after the
/// fields it knows would be covered by no check (a later trailer layout needs
/// a new magic).
inline constexpr uint32_t kSignatureTrailerSize = 112;
/// Values of the trailer's `algorithm` field.
inline constexpr uint32_t kSignatureEd25519 = 1;

// Byte offsets of the trailer fields, from the start of the trailer.
inline constexpr uint64_t kSigOffMagic = 0;
inline constexpr uint64_t kSigOffSize = 8;
inline constexpr uint64_t kSigOffAlgorithm = 12;
inline constexpr uint64_t kSigOffPublicKey = 16;
inline constexpr uint64_t kSigOffSignature = 48;

/// Domain separation: a signature over a Kiln header can never be replayed as
/// a signature over some other message made with the same key, and vice versa.
inline constexpr std::string_view kSignatureContext = "kiln program signature v1";

struct SignatureTrailer {
  uint32_t size = 0;
  uint32_t algorithm = 0;
  std::array<uint8_t, 32> public_key{};
  std::array<uint8_t, 64> signature{};
};

/// True when `bytes` (everything after the last segment) starts with the
/// trailer magic. Structure is checked by the caller.
inline bool has_signature_magic(std::span<const uint8_t> bytes) {
  return bytes.size() >= kSignatureMagic.size() &&
         std::memcmp(bytes.data(), kSignatureMagic.data(), kSignatureMagic.size()) == 0;
}

/// Field values; the caller has checked that `p` holds kSignatureTrailerSize bytes.
inline SignatureTrailer decode_signature_trailer(const uint8_t* p) {
  SignatureTrailer t;
  t.size = load_le32(p + kSigOffSize);
  t.algorithm = load_le32(p + kSigOffAlgorithm);
  std::memcpy(t.public_key.data(), p + kSigOffPublicKey, t.public_key.size());
  std::memcpy(t.signature.data(), p + kSigOffSignature, t.signature.size());
  return t;
}

inline std::array<uint8_t, kSignatureTrailerSize> encode_signature_trailer(const SignatureTrailer& t) {
  std::array<uint8_t, kSignatureTrailerSize> out{};
  std::memcpy(out.data() + kSigOffMagic, kSignatureMagic.data(), kSignatureMagic.size());
  store_le32(out.data() + kSigOffSize, t.size);
  store_le32(out.data() + kSigOffAlgorithm, t.algorithm);
  std::memcpy(out.data() + kSigOffPublicKey, t.public_key.data(), t.public_key.size());
  std::memcpy(out.data() + kSigOffSignature, t.signature.data(), t.signature.size());
  return out;
}

/// The message that is signed: the context string, one NUL, then the whole
/// program header ([0, header_size)).
inline std::vector<uint8_t> signature_message(std::span<const uint8_t> header) {
  std::vector<uint8_t> message(kSignatureContext.begin(), kSignatureContext.end());
  message.push_back(0);
  message.insert(message.end(), header.begin(), header.end());
  return message;
}

}  // namespace kiln::program_format
