// ZipArchive on synthetic archives built here byte by byte: the layouts torch
// writes (stored entries, sizes in a data descriptor, padded local extra
// fields, ZIP64 records) and corrupt ones (truncation at every length, bad
// signatures, out-of-bounds offsets, CRC mismatch, compressed entries).
#include "program/zip_archive.h"

#include "zip_builder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace kiln {
namespace {

using testing_util::make_zip;
using testing_util::TestEntry;
using testing_util::ZipOptions;

ZipOptions sizes_in_local_header() {
  ZipOptions opt;
  opt.data_descriptor = false;
  opt.local_padding = 0;
  return opt;
}
ZipOptions zip64(bool on = true) {
  ZipOptions opt;
  opt.zip64 = on;
  return opt;
}

const std::vector<TestEntry> kEntries = {
    {"pkg/archive_format", "pt2"},
    {"pkg/data/aotinductor/model/x.wrapper.so", std::string(1000, '\x7f') + "ELF"},
    {"pkg/empty", ""},
};

std::string text_of(std::span<const uint8_t> bytes) { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }

void expect_reads_back(const std::vector<uint8_t>& zip) {
  auto archive = ZipArchive::from_bytes(zip, "test.zip");
  ASSERT_TRUE(archive.ok()) << last_error_message();
  ASSERT_EQ(archive->entries().size(), kEntries.size());
  for (const TestEntry& e : kEntries) {
    const ZipEntry* entry = archive->find(e.name);
    ASSERT_NE(entry, nullptr) << e.name;
    EXPECT_EQ(entry->size, e.data.size());
    auto bytes = archive->read(*entry);
    ASSERT_TRUE(bytes.ok()) << last_error_message();
    EXPECT_EQ(text_of(*bytes), e.data);
  }
  EXPECT_EQ(archive->find("pkg/missing"), nullptr);
}

TEST(ZipArchive, Crc32KnownValue) {
  const std::string text = "123456789";  // the standard check value of CRC-32/ISO-HDLC
  EXPECT_EQ(crc32_of({reinterpret_cast<const uint8_t*>(text.data()), text.size()}), 0xcbf43926u);
}

TEST(ZipArchive, ReadsStoredEntriesWithDataDescriptors) { expect_reads_back(make_zip(kEntries)); }

TEST(ZipArchive, ReadsEntriesWithSizesInTheLocalHeader) {
  expect_reads_back(make_zip(kEntries, sizes_in_local_header()));
}

TEST(ZipArchive, ReadsZip64Records) { expect_reads_back(make_zip(kEntries, zip64())); }

TEST(ZipArchive, FindsTheEndRecordBehindAComment) {
  ZipOptions opt;
  opt.comment = std::string(300, 'c');
  expect_reads_back(make_zip(kEntries, opt));
}

TEST(ZipArchive, RecognisesZipMagic) {
  const auto zip = make_zip(kEntries);
  EXPECT_TRUE(ZipArchive::has_zip_magic(zip));
  const uint8_t program[] = {'K', 'I', 'L', 'N', 'P', 'R', 'O', 'G'};
  EXPECT_FALSE(ZipArchive::has_zip_magic(program));
  EXPECT_FALSE(ZipArchive::has_zip_magic(std::span<const uint8_t>(zip.data(), 3)));
}

TEST(ZipArchive, EveryTruncationIsRejectedWithAMessage) {
  for (const bool with_zip64 : {false, true}) {
    const auto zip = make_zip(kEntries, zip64(with_zip64));
    for (size_t n = 0; n < zip.size(); ++n) {
      auto archive = ZipArchive::from_bytes(std::span<const uint8_t>(zip.data(), n), "cut.zip");
      ASSERT_FALSE(archive.ok()) << "accepted a " << n << "-byte prefix (zip64 " << with_zip64 << ")";
      EXPECT_EQ(archive.error(), Error::InvalidProgram);
      EXPECT_NE(last_error_message().find("cut.zip: corrupt or truncated ZIP archive"), std::string::npos)
          << last_error_message();
    }
  }
}

TEST(ZipArchive, EverySingleByteFlipIsRejectedOrCaughtByCrcOrHarmless) {
  // No flip may crash or read out of bounds; a flipped data byte must fail
  // the CRC check of its entry.
  const auto zip = make_zip(kEntries);
  for (size_t i = 0; i < zip.size(); ++i) {
    auto bad = zip;
    bad[i] ^= 0x5a;
    auto archive = ZipArchive::from_bytes(bad, "flip.zip");
    if (!archive.ok()) continue;
    for (const ZipEntry& entry : archive->entries()) {
      auto bytes = archive->read(entry);
      if (bytes.ok()) {
        const TestEntry* original = nullptr;
        for (const TestEntry& e : kEntries)
          if (e.name == entry.name) original = &e;
        if (original) {
          EXPECT_EQ(text_of(*bytes), original->data) << "flip at " << i << " changed '" << entry.name << "'";
        }
      }
    }
  }
}

TEST(ZipArchive, DataCorruptionFailsTheCrc) {
  auto zip = make_zip(kEntries);
  auto archive = ZipArchive::from_bytes(zip, "x");
  ASSERT_TRUE(archive.ok());
  const uint64_t offset = archive->find("pkg/data/aotinductor/model/x.wrapper.so")->data_offset;
  zip[offset + 10] ^= 1;
  archive = ZipArchive::from_bytes(zip, "bad.zip");
  ASSERT_TRUE(archive.ok()) << last_error_message();
  auto bytes = archive->read(*archive->find("pkg/data/aotinductor/model/x.wrapper.so"));
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.error(), Error::IntegrityError);
  EXPECT_NE(last_error_message().find("fails its CRC-32 check"), std::string::npos) << last_error_message();
}

TEST(ZipArchive, CompressedEntriesAreListedButRefusedOnRead) {
  auto entries = kEntries;
  entries[1].method = 8;  // deflate (the bytes are not really deflated: never read)
  auto archive = ZipArchive::from_bytes(make_zip(entries), "deflated.pt2");
  ASSERT_TRUE(archive.ok()) << last_error_message();
  auto bytes = archive->read(*archive->find(entries[1].name));
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.error(), Error::NotSupported);
  EXPECT_NE(last_error_message().find("is compressed (method 8, deflate)"), std::string::npos) << last_error_message();
  EXPECT_NE(last_error_message().find("ZIP_STORED"), std::string::npos);
  EXPECT_TRUE(archive->read(*archive->find("pkg/archive_format")).ok());
}

TEST(ZipArchive, NamedStructuralErrors) {
  const auto zip = make_zip(kEntries, sizes_in_local_header());
  auto archive = ZipArchive::from_bytes(zip, "x");
  ASSERT_TRUE(archive.ok());
  // Offsets of the records, from the end: EOCD is the last 22 bytes.
  const size_t eocd = zip.size() - 22;
  const uint32_t directory = zip[eocd + 16] | (zip[eocd + 17] << 8) | (zip[eocd + 18] << 16) | (zip[eocd + 19] << 24);

  struct Case {
    const char* what;
    size_t offset;
    uint8_t value;
    const char* message;
  };
  const Case cases[] = {
      {"central signature", directory, 0, "central record 0 at offset"},
      {"directory offset", eocd + 19, 0x7f, "central directory ["},
      {"entry count", eocd + 10, 0xff, "the end record counts"},
      {"local header offset", directory + 45, 0x7f, "local header at offset"},
      {"local signature", 0, 0, "local header at offset 0"},
      {"local name", 30, 'X', "does not repeat the entry's name"},
      {"data size", directory + 24 + 3, 0x7f, "entry 'pkg/archive_format'"},
      {"multi disk", eocd + 4, 1, "multi-disk"},
  };
  for (const Case& c : cases) {
    auto bad = zip;
    bad[c.offset] = c.value;
    auto result = ZipArchive::from_bytes(bad, "bad.zip");
    ASSERT_FALSE(result.ok()) << c.what;
    EXPECT_EQ(result.error(), Error::InvalidProgram) << c.what;
    EXPECT_NE(last_error_message().find(c.message), std::string::npos) << c.what << ": " << last_error_message();
  }
}

TEST(ZipArchive, DuplicateNamesAreRejected) {
  auto entries = kEntries;
  entries.push_back(kEntries[0]);
  auto archive = ZipArchive::from_bytes(make_zip(entries), "dup.zip");
  ASSERT_FALSE(archive.ok());
  EXPECT_NE(last_error_message().find("appears twice"), std::string::npos) << last_error_message();
}

TEST(ZipArchive, NotAZipFile) {
  const std::vector<uint8_t> bytes(100, 'a');
  auto archive = ZipArchive::from_bytes(bytes, "text.txt");
  ASSERT_FALSE(archive.ok());
  EXPECT_NE(last_error_message().find("no end-of-central-directory record"), std::string::npos)
      << last_error_message();
}

TEST(ZipArchive, MissingFileIsNotFound) {
  auto archive = ZipArchive::open("/nonexistent/model.pt2");
  ASSERT_FALSE(archive.ok());
  EXPECT_EQ(archive.error(), Error::NotFound);
}

}  // namespace
}  // namespace kiln
