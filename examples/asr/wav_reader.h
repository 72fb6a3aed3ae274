// WAV file reader: RIFF/WAVE with 16-bit integer PCM (format tag 1, or
// WAVE_FORMAT_EXTENSIBLE with the PCM sub-format), any channel count (mixed
// down to mono by averaging). Anything else is refused with a message that
// names what the file holds and what would be accepted.
#pragma once

#include <string>
#include <vector>

namespace kiln::asr {

struct Audio {
  std::vector<float> samples;  // mono, in [-1, 1): int16 / 32768
  int sample_rate = 0;
  int channels = 0;            // of the file, before the mix-down
};

/// Reads `path`. On failure returns false and sets *error.
bool read_wav(const std::string& path, Audio* out, std::string* error);

/// Parses a WAV file held in memory (`name` is only used in messages).
bool parse_wav(const std::vector<unsigned char>& bytes, const std::string& name, Audio* out, std::string* error);

}  // namespace kiln::asr
