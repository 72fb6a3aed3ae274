#include "program/zip_archive.h"

#include <array>
#include <set>
#include <utility>

#include "program/file_format.h"
#include "program/regular_file.h"

namespace kiln {
namespace {

using program_format::checked_add;
using program_format::load_le32;
using program_format::load_le64;

uint16_t load_le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// Record signatures and fixed sizes (ZIP APPNOTE 4.3).
constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kLocalHeaderSize = 30;
constexpr uint64_t kCentralHeaderSize = 46;
constexpr uint64_t kEndSize = 22;
constexpr uint64_t kZip64EndSize = 56;
constexpr uint64_t kZip64LocatorSize = 20;
constexpr uint64_t kMaxComment = 0xffff;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kFlagEncrypted = 0x0001;

std::string offset_str(uint64_t v) { return std::to_string(v); }

const char* method_name(uint16_t method) {
  switch (method) {
    case 8: return "deflate";
    case 9: return "deflate64";
    case 12: return "bzip2";
    case 14: return "lzma";
    case 93: return "zstd";
    case 95: return "xz";
    default: return "unknown";
  }
}

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

// Bounds-checked reader over the archive bytes; every failure names the
// record being read and its offset.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, const std::string& label) : bytes_(bytes), label_(label) {}
  // [offset, offset + size) lies in the file.
  bool fits(uint64_t offset, uint64_t size) const {
    uint64_t end = 0;
    return checked_add(offset, size, &end) && end <= bytes_.size();
  }
  Error corrupt(const std::string& what) const {
    return set_error(Error::InvalidProgram, label_ + ": corrupt or truncated ZIP archive: " + what);
  }
  const uint8_t* at(uint64_t offset) const { return bytes_.data() + offset; }
  uint64_t size() const { return bytes_.size(); }

 private:
  std::span<const uint8_t> bytes_;
  const std::string& label_;
};

struct EndRecord {
  uint64_t entries = 0;
  uint64_t directory_size = 0;
  uint64_t directory_offset = 0;
};

// Finds the end-of-central-directory record (scanning back over a comment of
// up to 64 KiB) and, when its fields overflow, the ZIP64 record it points at.
Result<EndRecord> read_end_record(const Cursor& c) {
  if (c.size() < kEndSize) return c.corrupt("file is " + std::to_string(c.size()) + " bytes, shorter than the end record");
  const uint64_t last = c.size() - kEndSize;
  const uint64_t first = last > kMaxComment ? last - kMaxComment : 0;
  uint64_t pos = last + 1;
  for (uint64_t p = last + 1; p-- > first;) {
    if (load_le32(c.at(p)) == kEndSig && p + kEndSize + load_le16(c.at(p + 20)) == c.size()) {
      pos = p;
      break;
    }
  }
  if (pos > last) return c.corrupt("no end-of-central-directory record in the last 64 KiB (not a ZIP file, or cut short)");
  const uint8_t* e = c.at(pos);
  if (load_le16(e + 4) != 0 || load_le16(e + 6) != 0)
    return c.corrupt("multi-disk archives are not supported (end record at offset " + offset_str(pos) + ")");
  EndRecord end;
  end.entries = load_le16(e + 10);
  end.directory_size = load_le32(e + 12);
  end.directory_offset = load_le32(e + 16);
  const bool zip64 = end.entries == 0xffff || end.directory_size == 0xffffffffu || end.directory_offset == 0xffffffffu;
  if (pos >= kZip64LocatorSize && load_le32(c.at(pos - kZip64LocatorSize)) == kZip64LocatorSig) {
    const uint8_t* loc = c.at(pos - kZip64LocatorSize);
    const uint64_t record = load_le64(loc + 8);
    if (!c.fits(record, kZip64EndSize) || load_le32(c.at(record)) != kZip64EndSig)
      return c.corrupt("ZIP64 end record offset " + offset_str(record) + " (from the locator at offset " +
                       offset_str(pos - kZip64LocatorSize) + ") is out of bounds or has a bad signature");
    const uint8_t* z = c.at(record);
    end.entries = load_le64(z + 32);
    end.directory_size = load_le64(z + 40);
    end.directory_offset = load_le64(z + 48);
  } else if (zip64) {
    return c.corrupt("the end record needs a ZIP64 record, but there is no ZIP64 locator before offset " +
                     offset_str(pos));
  }
  if (!c.fits(end.directory_offset, end.directory_size))
    return c.corrupt("central directory [" + offset_str(end.directory_offset) + ", +" +
                     std::to_string(end.directory_size) + ") lies outside the " + std::to_string(c.size()) +
                     "-byte file");
  return end;
}

// Replaces 0xffffffff fields of a central entry with their ZIP64 extra values
// (which appear in this order, each only when its 32-bit field overflowed).
Error apply_zip64_extra(const Cursor& c, const uint8_t* extra, uint64_t extra_size, uint64_t where, ZipEntry* entry,
                        uint64_t* local_offset) {
  const bool need_size = entry->size == 0xffffffffu;
  const bool need_csize = entry->compressed_size == 0xffffffffu;
  const bool need_offset = *local_offset == 0xffffffffu;
  if (!need_size && !need_csize && !need_offset) return Error::Ok;
  for (uint64_t p = 0; p + 4 <= extra_size;) {
    const uint16_t id = load_le16(extra + p);
    const uint16_t len = load_le16(extra + p + 2);
    if (p + 4 + len > extra_size) break;
    if (id == kZip64ExtraId) {
      const uint8_t* f = extra + p + 4;
      const uint64_t needed = 8u * (need_size + need_csize + need_offset);
      if (len < needed)
        return c.corrupt("entry '" + entry->name + "' (central record at offset " + offset_str(where) +
                         "): ZIP64 extra field holds " + std::to_string(len) + " bytes, needs " +
                         std::to_string(needed));
      if (need_size) entry->size = load_le64(f), f += 8;
      if (need_csize) entry->compressed_size = load_le64(f), f += 8;
      if (need_offset) *local_offset = load_le64(f);
      return Error::Ok;
    }
    p += 4 + len;
  }
  return c.corrupt("entry '" + entry->name + "' (central record at offset " + offset_str(where) +
                   ") has 32-bit fields marked as ZIP64 but no ZIP64 extra field");
}

}  // namespace

uint32_t crc32_of(std::span<const uint8_t> bytes) noexcept {
  const auto& table = crc_table();
  uint32_t c = 0xffffffffu;
  for (uint8_t b : bytes) c = table[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

bool ZipArchive::has_zip_magic(std::span<const uint8_t> bytes) noexcept {
  if (bytes.size() < 4) return false;
  const uint32_t sig = load_le32(bytes.data());
  return sig == kLocalHeaderSig || sig == kEndSig;
}

Result<ZipArchive> ZipArchive::open(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(RegularFile opened, RegularFile::open(path, "package"));
  KILN_ASSIGN_OR_RETURN(PrivateBuffer file, opened.read(0, opened.size()));
  return parse(std::move(file), "'" + path + "'");
}

Result<ZipArchive> ZipArchive::from_bytes(std::span<const uint8_t> bytes, const std::string& label) {
  KILN_ASSIGN_OR_RETURN(PrivateBuffer file, PrivateBuffer::copy_of(bytes, label));
  return parse(std::move(file), label);
}

Result<ZipArchive> ZipArchive::parse(PrivateBuffer file, const std::string& label) {
  ZipArchive archive;
  archive.file_ = std::move(file);
  archive.label_ = label;
  const Cursor c(archive.file_.bytes(), archive.label_);
  KILN_ASSIGN_OR_RETURN(EndRecord end, read_end_record(c));
  // Each central record is at least 46 bytes: a count the directory cannot
  // hold is corrupt (and must not drive a huge reserve()).
  if (end.entries > end.directory_size / kCentralHeaderSize)
    return c.corrupt("the end record counts " + std::to_string(end.entries) + " entries but the central directory is " +
                     std::to_string(end.directory_size) + " bytes");
  archive.entries_.reserve(end.entries);
  std::set<std::string, std::less<>> names;
  uint64_t pos = end.directory_offset;
  const uint64_t directory_end = end.directory_offset + end.directory_size;
  for (uint64_t i = 0; i < end.entries; ++i) {
    const std::string where = "central record " + std::to_string(i) + " at offset " + offset_str(pos);
    if (pos + kCentralHeaderSize > directory_end) return c.corrupt(where + " runs past the central directory");
    const uint8_t* h = c.at(pos);
    if (load_le32(h) != kCentralHeaderSig) return c.corrupt(where + " has a bad signature");
    ZipEntry entry;
    entry.flags = load_le16(h + 8);
    entry.method = load_le16(h + 10);
    entry.crc32 = load_le32(h + 16);
    entry.compressed_size = load_le32(h + 20);
    entry.size = load_le32(h + 24);
    const uint64_t name_len = load_le16(h + 28);
    const uint64_t extra_len = load_le16(h + 30);
    const uint64_t comment_len = load_le16(h + 32);
    uint64_t local = load_le32(h + 42);
    const uint64_t record_size = kCentralHeaderSize + name_len + extra_len + comment_len;
    if (pos + record_size > directory_end) return c.corrupt(where + ": its name/extra/comment run past the directory");
    entry.name.assign(reinterpret_cast<const char*>(h + kCentralHeaderSize), name_len);
    if (entry.name.empty() || entry.name.find('\0') != std::string::npos)
      return c.corrupt(where + " has an empty name or one with a NUL byte");
    KILN_RETURN_IF_ERROR(apply_zip64_extra(c, h + kCentralHeaderSize + name_len, extra_len, pos, &entry, &local));
    if (!names.insert(entry.name).second) return c.corrupt("entry '" + entry.name + "' appears twice");

    // The local header repeats the name; its extra field may differ (torch
    // pads it to align the data), so the data offset comes from it.
    if (!c.fits(local, kLocalHeaderSize) || load_le32(c.at(local)) != kLocalHeaderSig)
      return c.corrupt("entry '" + entry.name + "': local header at offset " + offset_str(local) +
                       " is out of bounds or has a bad signature");
    const uint8_t* lh = c.at(local);
    const uint64_t local_name_len = load_le16(lh + 26);
    const uint64_t local_extra_len = load_le16(lh + 28);
    if (!c.fits(local + kLocalHeaderSize, local_name_len + local_extra_len) ||
        std::string_view(reinterpret_cast<const char*>(lh + kLocalHeaderSize), local_name_len) != entry.name)
      return c.corrupt("entry '" + entry.name + "': local header at offset " + offset_str(local) +
                       " does not repeat the entry's name");
    entry.data_offset = local + kLocalHeaderSize + local_name_len + local_extra_len;
    if (!c.fits(entry.data_offset, entry.compressed_size))
      return c.corrupt("entry '" + entry.name + "': its " + std::to_string(entry.compressed_size) +
                       " bytes at offset " + offset_str(entry.data_offset) + " run past the end of the file");
    if (entry.method == 0 && entry.compressed_size != entry.size)
      return c.corrupt("entry '" + entry.name + "' is stored but its sizes differ (" +
                       std::to_string(entry.compressed_size) + " vs " + std::to_string(entry.size) + ")");
    archive.entries_.push_back(std::move(entry));
    pos += record_size;
  }
  return archive;
}

const ZipEntry* ZipArchive::find(std::string_view name) const noexcept {
  for (const ZipEntry& entry : entries_)
    if (entry.name == name) return &entry;
  return nullptr;
}

Result<std::span<const uint8_t>> ZipArchive::read(const ZipEntry& entry) const {
  if (entry.flags & kFlagEncrypted)
    return set_error(Error::NotSupported, label_ + ": entry '" + entry.name + "' is encrypted; Kiln reads only "
                                                                            "unencrypted archives");
  if (entry.method != 0)
    return set_error(Error::NotSupported,
                     label_ + ": entry '" + entry.name + "' is compressed (method " + std::to_string(entry.method) +
                         ", " + method_name(entry.method) +
                         "); Kiln reads only stored entries, as torch writes them. Use the package torch wrote, "
                         "or re-zip it without compression (zip -0, or zipfile.ZIP_STORED)");
  const std::span<const uint8_t> bytes = file_.bytes().subspan(entry.data_offset, entry.size);
  if (crc32_of(bytes) != entry.crc32)
    return set_error(Error::IntegrityError, label_ + ": entry '" + entry.name + "' fails its CRC-32 check (the "
                                                                              "package is corrupt)");
  return bytes;
}

}  // namespace kiln
