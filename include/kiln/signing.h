// Signed programs: Ed25519 keys, signing a `.kiln` file and verifying it.
//
// A signature covers the program header; the header records the FlatBuffer's
// SHA-256, and the FlatBuffer records the SHA-256 of every named data entry
// (libraries, weights, in the file or in external data files). So a valid
// signature plus matching digests means every byte the runtime uses is what
// the signer signed. Layout and message: docs/program-format.md, "Signatures".
//
// Key files are one line of text (the format `kiln keygen` writes):
//   kiln-ed25519-public <64 hex digits> [comment]     (NAME.pub)
//   kiln-ed25519-secret <64 hex digits: the seed> [comment]  (NAME.key, mode 0600)
// A trusted-keys file holds any number of public key lines; blank lines and
// lines starting with '#' are ignored.
//
// All functions are thread-safe. Errors come with a message naming what failed.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/error.h"
#include "kiln/export.h"
#include "kiln/program_file.h"

namespace kiln {

using PublicKey = std::array<uint8_t, 32>;

/// An Ed25519 secret key, kept as its 32-byte seed (the key pair is derived
/// from it when signing). Treat it as a secret: do not log it.
struct SecretKey {
  std::array<uint8_t, 32> seed{};
};

struct KeyPair {
  PublicKey public_key{};
  SecretKey secret_key;
};

/// A fresh key pair from the OS random source.
KILN_API Result<KeyPair> generate_key_pair();
/// The public key belonging to `secret`.
KILN_API PublicKey public_key_of(const SecretKey& secret);

/// One key-file line, newline included; `comment` (no newline) is appended
/// after a space when not empty.
KILN_API std::string format_public_key(const PublicKey& key, std::string_view comment = {});
KILN_API std::string format_secret_key(const SecretKey& key, std::string_view comment = {});
/// Lower-case hex of a public key (how messages name keys).
KILN_API std::string public_key_hex(const PublicKey& key);

/// Every public key line of `text`; `source` names the text in messages.
/// InvalidArgument for a malformed line (naming it) or when there is no key.
KILN_API Result<std::vector<PublicKey>> parse_public_keys(std::string_view text, std::string_view source);
/// The one secret key line of `text`. InvalidArgument when malformed.
KILN_API Result<SecretKey> parse_secret_key(std::string_view text, std::string_view source);
/// Reads and parses a key file. NotFound / IoError when it cannot be read.
KILN_API Result<std::vector<PublicKey>> read_public_keys(const std::string& path);
KILN_API Result<SecretKey> read_secret_key(const std::string& path);

/// Writes `stem`.key (mode 0600) and `stem`.pub (mode 0644). Never
/// overwrites: InvalidArgument if either file exists.
KILN_API Error write_key_pair(const KeyPair& keys, const std::string& stem);

/// Signs the program at `path` (its external data files, if any, are found
/// next to it or given in `data_files`) and writes the signed program to
/// `out_path` ("" = replace `path`). The output is written to a temporary file
/// in the same directory and renamed over the target, so readers see either
/// the old or the new file, never a partial one. An existing signature is
/// replaced. Refuses (IntegrityError) to sign a program whose named data does
/// not match its digests.
KILN_API Error sign_program_file(const std::string& path, const SecretKey& key,
                                 const std::vector<std::string>& data_files = {},
                                 const std::string& out_path = "");

/// Checks that `program` has a valid signature by one of `trusted` and
/// that every named data entry matches its recorded SHA-256, i.e. that every
/// byte the runtime will use was signed. IntegrityError naming the failure
/// (not signed, signer not trusted, signature does not match the header, a
/// named entry's digest); NotSupported for an unknown signature algorithm;
/// InvalidArgument when `trusted` is empty. Each entry is checked on a private
/// copy (ProgramFile::read_named_data); with `verified` those checked copies
/// are handed back, so a caller about to use them need not read them again.
KILN_API Error verify_signed_program(const ProgramFile& program, std::span<const PublicKey> trusted,
                                     std::vector<NamedBytes>* verified = nullptr);

}  // namespace kiln
