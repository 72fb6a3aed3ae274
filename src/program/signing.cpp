// Ed25519 keys, signing and verification of `.kiln` programs (kiln/signing.h),
// on libsodium's detached crypto_sign_ed25519. libsodium is linked statically
// into libkiln with its symbols hidden.
#include "kiln/signing.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "program/atomic_file.h"
#include "program/hex.h"
#include "program/regular_file.h"
#include "program/signature.h"
#include "program/write_all.h"

namespace kiln {

namespace pf = program_format;

static_assert(crypto_sign_ed25519_PUBLICKEYBYTES == std::tuple_size_v<PublicKey>);
static_assert(crypto_sign_ed25519_SEEDBYTES == sizeof(SecretKey::seed));
static_assert(crypto_sign_ed25519_BYTES == std::tuple_size_v<decltype(ProgramSignature::signature)>);

namespace {

constexpr std::string_view kPublicTag = "kiln-ed25519-public";
constexpr std::string_view kSecretTag = "kiln-ed25519-secret";

Error init_sodium() {
  // Idempotent and thread-safe; picks the fastest implementation for this CPU.
  if (sodium_init() < 0) return set_error(Error::Internal, "libsodium failed to initialise");
  return Error::Ok;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool parse_hex32(std::string_view text, std::array<uint8_t, 32>* out) {
  if (text.size() != 64) return false;
  for (size_t i = 0; i < 32; ++i) {
    const int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The first two whitespace-separated words of a line: tag and hex key.
std::pair<std::string_view, std::string_view> tag_and_key(std::string_view line) {
  const size_t tag_end = line.find_first_of(" \t");
  if (tag_end == std::string_view::npos) return {line, {}};
  std::string_view rest = trim(line.substr(tag_end));
  const size_t key_end = rest.find_first_of(" \t");
  return {line.substr(0, tag_end), rest.substr(0, key_end)};
}

// Calls `on_line(line_number, line)` for every line that is not blank or a comment.
template <typename F>
Error for_each_key_line(std::string_view text, F on_line) {
  size_t number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    if (line.empty() || line.front() == '#') continue;
    KILN_RETURN_IF_ERROR(on_line(number, line));
  }
  return Error::Ok;
}

std::string key_line(std::string_view tag, std::span<const uint8_t> key, std::string_view comment) {
  std::string line(tag);
  line.append(" ").append(to_hex(key));
  if (!comment.empty()) line.append(" ").append(comment);
  return line.append("\n");
}

Error write_new_file(const std::string& path, const std::string& text, mode_t mode, std::string_view what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    return set_error(err == EEXIST ? Error::InvalidArgument : Error::IoError,
                     std::string(what) + " '" + path +
                         "': " + (err == EEXIST ? "already exists (not overwritten)" : std::strerror(err)));
  }
  // The umask may have cleared bits of `mode`; a secret key must be 0600 exactly.
  const bool ok =
      ::fchmod(fd, mode) == 0 &&
      write_all(fd, {reinterpret_cast<const uint8_t*>(text.data()), text.size()}) == 0;
  const int err = errno;
  if (::close(fd) != 0 || !ok) {
    ::unlink(path.c_str());
    return set_error(Error::IoError,
                     std::string(what) + " '" + path + "': write failed: " + std::strerror(err));
  }
  return Error::Ok;
}

// Reads every named entry into private memory and checks its digest there;
// the checked copies are appended to `verified` when the caller keeps them.
Error check_every_digest(const ProgramFile& program, std::vector<NamedBytes>* verified) {
  for (const NamedDataInfo& info : program.named_data()) {
    auto bytes = program.read_named_data(info.key, /*verify_digest=*/true);
    if (!bytes.ok()) return bytes.error();
    if (verified) verified->push_back(std::move(bytes).value());
  }
  return Error::Ok;
}

// Key files are a few lines of text; the bound keeps a hostile path (a huge
// or endless file) from being read whole.
constexpr uint64_t kMaxKeyFileSize = 1 << 20;

Result<std::string> read_key_file(const std::string& path, const std::string& what) {
  KILN_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path, what));
  KILN_ASSIGN_OR_RETURN(PrivateBuffer bytes, file.read_all(kMaxKeyFileSize));
  return std::string(reinterpret_cast<const char*>(bytes.data()), static_cast<size_t>(bytes.size()));
}
}  // namespace

Result<KeyPair> generate_key_pair() {
  KILN_RETURN_IF_ERROR(init_sodium());
  KeyPair keys;
  randombytes_buf(keys.secret_key.seed.data(), keys.secret_key.seed.size());
  keys.public_key = public_key_of(keys.secret_key);
  return keys;
}

PublicKey public_key_of(const SecretKey& secret) {
  // libsodium asks for sodium_init() before any other call. Deriving a key needs
  // no randomness, nothing init could fail to set up, so its status is not reported.
  (void)init_sodium();
  PublicKey public_key{};
  std::array<uint8_t, crypto_sign_ed25519_SECRETKEYBYTES> expanded{};
  crypto_sign_ed25519_seed_keypair(public_key.data(), expanded.data(), secret.seed.data());
  sodium_memzero(expanded.data(), expanded.size());
  return public_key;
}

std::string format_public_key(const PublicKey& key, std::string_view comment) {
  return key_line(kPublicTag, key, comment);
}

std::string format_secret_key(const SecretKey& key, std::string_view comment) {
  return key_line(kSecretTag, key.seed, comment);
}

std::string public_key_hex(const PublicKey& key) { return to_hex(key); }

Result<std::vector<PublicKey>> parse_public_keys(std::string_view text, std::string_view source) {
  std::vector<PublicKey> keys;
  Error error = for_each_key_line(text, [&](size_t number, std::string_view line) -> Error {
    const std::string at = std::string(source) + " line " + std::to_string(number);
    auto [tag, key_hex] = tag_and_key(line);
    if (tag == kSecretTag)
      return set_error(Error::InvalidArgument,
                       at + " holds a secret key; trust the matching .pub file instead");
    if (tag != kPublicTag)
      return set_error(Error::InvalidArgument,
                       at + " does not start with '" + std::string(kPublicTag) + "' (not a Kiln public key)");
    PublicKey key{};
    if (!parse_hex32(key_hex, &key))
      return set_error(Error::InvalidArgument, at + ": the key is not 64 hex digits");
    keys.push_back(key);
    return Error::Ok;
  });
  KILN_RETURN_IF_ERROR(error);
  if (keys.empty()) return set_error(Error::InvalidArgument, std::string(source) + " holds no public key");
  return keys;
}

Result<SecretKey> parse_secret_key(std::string_view text, std::string_view source) {
  SecretKey secret;
  size_t found = 0;
  Error error = for_each_key_line(text, [&](size_t number, std::string_view line) -> Error {
    const std::string at = std::string(source) + " line " + std::to_string(number);
    auto [tag, key_hex] = tag_and_key(line);
    if (tag != kSecretTag)
      return set_error(Error::InvalidArgument,
                       at + " does not start with '" + std::string(kSecretTag) + "' (not a Kiln secret key)");
    if (++found > 1)
      return set_error(Error::InvalidArgument, at + ": a secret key file holds exactly one key");
    if (!parse_hex32(key_hex, &secret.seed))
      return set_error(Error::InvalidArgument, at + ": the key is not 64 hex digits");
    return Error::Ok;
  });
  KILN_RETURN_IF_ERROR(error);
  if (found == 0) return set_error(Error::InvalidArgument, std::string(source) + " holds no secret key");
  return secret;
}

Result<std::vector<PublicKey>> read_public_keys(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string text, read_key_file(path, "public key file"));
  return parse_public_keys(text, "public key file '" + path + "'");
}

Result<SecretKey> read_secret_key(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string text, read_key_file(path, "secret key file"));
  const Result<SecretKey> key = parse_secret_key(text, "secret key file '" + path + "'");
  sodium_memzero(text.data(), text.size());
  return key;
}

Error write_key_pair(const KeyPair& keys, const std::string& stem) {
  const size_t slash = stem.rfind('/');
  const std::string name = slash == std::string::npos ? stem : stem.substr(slash + 1);
  const std::string secret_path = stem + ".key", public_path = stem + ".pub";
  // Checked up front so a refused call writes neither file.
  for (const std::string& path : {secret_path, public_path})
    if (::access(path.c_str(), F_OK) == 0)
      return set_error(Error::InvalidArgument, "key file '" + path + "' already exists (not overwritten)");
  KILN_RETURN_IF_ERROR(
      write_new_file(secret_path, format_secret_key(keys.secret_key, name), 0600, "secret key file"));
  const Error error =
      write_new_file(public_path, format_public_key(keys.public_key, name), 0644, "public key file");
  if (error != Error::Ok) ::unlink(secret_path.c_str());
  return error;
}

Error sign_program_file(const std::string& path, const SecretKey& key,
                        const std::vector<std::string>& data_files, const std::string& out_path) {
  KILN_RETURN_IF_ERROR(init_sodium());
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const ProgramFile> program, ProgramFile::open(path, data_files));
  // A signature vouches for the digests; refuse to vouch for bytes that
  // already fail them. The content is read once, checked on that copy, and
  // that same copy is written out below.
  auto content = program->read_content();
  if (!content.ok() || check_every_digest(*program, nullptr) != Error::Ok)
    return set_error(Error::IntegrityError, "not signing '" + path + "': " + last_error_message());

  pf::SignatureTrailer trailer;
  trailer.size = pf::kSignatureTrailerSize;
  trailer.algorithm = pf::kSignatureEd25519;
  std::array<uint8_t, crypto_sign_ed25519_SECRETKEYBYTES> expanded{};
  crypto_sign_ed25519_seed_keypair(trailer.public_key.data(), expanded.data(), key.seed.data());
  const std::vector<uint8_t> message = pf::signature_message(program->header_bytes());
  const int rc = crypto_sign_ed25519_detached(trailer.signature.data(), nullptr, message.data(),
                                              message.size(), expanded.data());
  sodium_memzero(expanded.data(), expanded.size());
  if (rc != 0) return set_error(Error::Internal, "Ed25519 signing failed");

  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    return set_error(Error::IoError, "program file '" + path + "': stat failed: " + std::strerror(err));
  }
  const auto encoded = pf::encode_signature_trailer(trailer);
  // The content leaves out an existing trailer, so re-signing replaces it.
  return replace_file_atomically(out_path.empty() ? path : out_path,
                                 {content->bytes(), std::span<const uint8_t>(encoded)},
                                 st.st_mode & 07777);
}

Error verify_signed_program(const ProgramFile& program, std::span<const PublicKey> trusted,
                            std::vector<NamedBytes>* verified) {
  KILN_RETURN_IF_ERROR(init_sodium());
  if (trusted.empty())
    return set_error(Error::InvalidArgument,
                     "no trusted public keys were given to check the signature against");
  const ProgramSignature* signature = program.signature();
  if (!signature)
    return set_error(Error::IntegrityError,
                     "the program is not signed (no signature trailer after its last segment)");
  if (signature->algorithm != pf::kSignatureEd25519)
    return set_error(Error::NotSupported, "the program is signed with algorithm " +
                                              std::to_string(signature->algorithm) +
                                              ", which this build of Kiln does not know (1 = Ed25519)");
  if (std::find(trusted.begin(), trusted.end(), signature->public_key) == trusted.end())
    return set_error(Error::IntegrityError,
                     "the program is signed by key " + public_key_hex(signature->public_key) +
                         ", which is not one of the " + std::to_string(trusted.size()) + " trusted keys");
  const std::vector<uint8_t> message = pf::signature_message(program.header_bytes());
  if (crypto_sign_ed25519_verify_detached(signature->signature.data(), message.data(), message.size(),
                                          signature->public_key.data()) != 0)
    return set_error(Error::IntegrityError, "the signature by key " + public_key_hex(signature->public_key) +
                                                " does not match the program header: the header or the "
                                                "signature was modified after signing");
  // The header is authentic, so the digests it covers are; now every byte
  // they describe must match them.
  return check_every_digest(program, verified);
}

}  // namespace kiln
