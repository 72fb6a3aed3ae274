// Builds ZIP archives byte by byte for tests: stored entries laid out as
// torch's PyTorchFileWriter writes them (sizes in data descriptors, padded
// local extra fields), optionally with ZIP64 records or a comment.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "program/zip_archive.h"

namespace kiln::testing_util {

inline void put16(std::vector<uint8_t>* out, uint32_t v) {
  out->push_back(static_cast<uint8_t>(v));
  out->push_back(static_cast<uint8_t>(v >> 8));
}
inline void put32(std::vector<uint8_t>* out, uint32_t v) {
  put16(out, v & 0xffff);
  put16(out, v >> 16);
}
inline void put64(std::vector<uint8_t>* out, uint64_t v) {
  put32(out, static_cast<uint32_t>(v));
  put32(out, static_cast<uint32_t>(v >> 32));
}
inline void put_bytes(std::vector<uint8_t>* out, std::string_view s) { out->insert(out->end(), s.begin(), s.end()); }

struct TestEntry {
  std::string name;
  std::string data;
  uint16_t method = 0;
};

struct ZipOptions {
  bool data_descriptor = true;  // sizes and CRC after the data (torch: flag bit 3)
  uint16_t local_padding = 6;   // extra bytes in the local header only (torch aligns data)
  bool zip64 = false;           // 32-bit fields set to 0xffffffff, real values in ZIP64 records
  std::string comment;
};

inline std::vector<uint8_t> make_zip(const std::vector<TestEntry>& entries, const ZipOptions& opt = {}) {
  std::vector<uint8_t> out;
  std::vector<uint64_t> offsets;
  for (const TestEntry& e : entries) {
    offsets.push_back(out.size());
    const uint32_t crc = crc32_of({reinterpret_cast<const uint8_t*>(e.data.data()), e.data.size()});
    put32(&out, 0x04034b50);
    put16(&out, 20);
    put16(&out, opt.data_descriptor ? 0x0808 : 0x0800);
    put16(&out, e.method);
    put32(&out, 0);  // time, date
    put32(&out, opt.data_descriptor ? 0 : crc);
    put32(&out, opt.data_descriptor ? 0 : static_cast<uint32_t>(e.data.size()));
    put32(&out, opt.data_descriptor ? 0 : static_cast<uint32_t>(e.data.size()));
    put16(&out, static_cast<uint32_t>(e.name.size()));
    put16(&out, opt.local_padding);
    put_bytes(&out, e.name);
    out.insert(out.end(), opt.local_padding, 0);
    put_bytes(&out, e.data);
    if (opt.data_descriptor) {
      put32(&out, 0x08074b50);
      put32(&out, crc);
      put32(&out, static_cast<uint32_t>(e.data.size()));
      put32(&out, static_cast<uint32_t>(e.data.size()));
    }
  }
  const uint64_t directory_offset = out.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const TestEntry& e = entries[i];
    const uint32_t crc = crc32_of({reinterpret_cast<const uint8_t*>(e.data.data()), e.data.size()});
    put32(&out, 0x02014b50);
    put16(&out, 45);
    put16(&out, 45);
    put16(&out, opt.data_descriptor ? 0x0808 : 0x0800);
    put16(&out, e.method);
    put32(&out, 0);
    put32(&out, crc);
    put32(&out, opt.zip64 ? 0xffffffffu : static_cast<uint32_t>(e.data.size()));
    put32(&out, opt.zip64 ? 0xffffffffu : static_cast<uint32_t>(e.data.size()));
    put16(&out, static_cast<uint32_t>(e.name.size()));
    put16(&out, opt.zip64 ? 28 : 0);
    put16(&out, 0);  // comment
    put16(&out, 0);  // disk
    put16(&out, 0);
    put32(&out, 0);
    put32(&out, opt.zip64 ? 0xffffffffu : static_cast<uint32_t>(offsets[i]));
    put_bytes(&out, e.name);
    if (opt.zip64) {
      put16(&out, 0x0001);
      put16(&out, 24);
      put64(&out, e.data.size());
      put64(&out, e.data.size());
      put64(&out, offsets[i]);
    }
  }
  const uint64_t directory_size = out.size() - directory_offset;
  if (opt.zip64) {
    const uint64_t record = out.size();
    put32(&out, 0x06064b50);
    put64(&out, 44);
    put16(&out, 45);
    put16(&out, 45);
    put32(&out, 0);
    put32(&out, 0);
    put64(&out, entries.size());
    put64(&out, entries.size());
    put64(&out, directory_size);
    put64(&out, directory_offset);
    put32(&out, 0x07064b50);
    put32(&out, 0);
    put64(&out, record);
    put32(&out, 1);
  }
  put32(&out, 0x06054b50);
  put32(&out, 0);  // disks
  put16(&out, opt.zip64 ? 0xffff : static_cast<uint32_t>(entries.size()));
  put16(&out, opt.zip64 ? 0xffff : static_cast<uint32_t>(entries.size()));
  put32(&out, opt.zip64 ? 0xffffffffu : static_cast<uint32_t>(directory_size));
  put32(&out, opt.zip64 ? 0xffffffffu : static_cast<uint32_t>(directory_offset));
  put16(&out, static_cast<uint32_t>(opt.comment.size()));
  put_bytes(&out, opt.comment);
  return out;
}

}  // namespace kiln::testing_util
