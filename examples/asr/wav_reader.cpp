#include "wav_reader.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

namespace kiln::asr {
namespace {

uint16_t le16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

constexpr uint16_t kFormatPcm = 1;
constexpr uint16_t kFormatExtensible = 0xFFFE;

}  // namespace

bool parse_wav(const std::vector<unsigned char>& bytes, const std::string& name, Audio* out, std::string* error) {
  const auto fail = [&](const std::string& what) {
    *error = name + ": " + what;
    return false;
  };
  if (bytes.size() < 12 || std::memcmp(bytes.data(), "RIFF", 4) != 0 || std::memcmp(bytes.data() + 8, "WAVE", 4) != 0)
    return fail("not a WAV file (no RIFF/WAVE header)");

  // Walk the chunks; "fmt " must come before "data". A chunk that claims more
  // bytes than the file has is truncated to what is there only for "data"
  // (streaming writers leave its size at 0 or 0xFFFFFFFF).
  size_t pos = 12;
  bool have_format = false;
  uint16_t format = 0, channels = 0, bits = 0, block_align = 0;
  uint32_t rate = 0;
  while (pos + 8 <= bytes.size()) {
    const unsigned char* chunk = bytes.data() + pos;
    const uint32_t size = le32(chunk + 4);
    const size_t body = pos + 8;
    const size_t available = bytes.size() - body;
    if (std::memcmp(chunk, "fmt ", 4) == 0) {
      if (size < 16 || size > available) return fail("truncated 'fmt ' chunk");
      const unsigned char* f = bytes.data() + body;
      format = le16(f);
      channels = le16(f + 2);
      rate = le32(f + 4);
      block_align = le16(f + 12);
      bits = le16(f + 14);
      if (format == kFormatExtensible) {
        if (size < 40) return fail("WAVE_FORMAT_EXTENSIBLE 'fmt ' chunk is shorter than 40 bytes");
        format = le16(f + 24);  // first two bytes of the sub-format GUID: the format tag
      }
      have_format = true;
    } else if (std::memcmp(chunk, "data", 4) == 0) {
      if (!have_format) return fail("'data' chunk before the 'fmt ' chunk");
      if (format != kFormatPcm || bits != 16)
        return fail("unsupported sample format (format tag " + std::to_string(format) + ", " + std::to_string(bits) +
                    " bits per sample); kiln-asr reads 16-bit integer PCM: convert with e.g. "
                    "'sox in.wav -b 16 -e signed-integer out.wav'");
      if (channels == 0 || block_align != channels * 2) return fail("inconsistent channel count / block alignment");
      if (rate == 0) return fail("sample rate is 0");
      const size_t n_bytes = size > available ? available : size;
      const size_t frames = n_bytes / block_align;
      out->samples.assign(frames, 0.0f);
      out->sample_rate = static_cast<int>(rate);
      out->channels = channels;
      const unsigned char* d = bytes.data() + body;
      for (size_t i = 0; i < frames; ++i) {
        int32_t sum = 0;
        for (uint16_t c = 0; c < channels; ++c) {
          sum += static_cast<int16_t>(le16(d + (i * channels + c) * 2));
        }
        out->samples[i] = static_cast<float>(sum) / (32768.0f * static_cast<float>(channels));
      }
      return true;
    }
    if (size > available) return fail("chunk '" + std::string(reinterpret_cast<const char*>(chunk), 4) + "' runs past the end of the file");
    pos = body + size + (size & 1);  // chunks are padded to an even size
  }
  return fail(have_format ? "no 'data' chunk" : "no 'fmt ' chunk");
}

bool read_wav(const std::string& path, Audio* out, std::string* error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    *error = path + ": cannot open the file";
    return false;
  }
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return parse_wav(bytes, path, out, error);
}

}  // namespace kiln::asr
