// Sample-rate conversion to the model's rate: band-limited interpolation with
// a Hann-windowed sinc kernel (cut-off below the lower of the two Nyquist
// frequencies, so downsampling does not alias).
#pragma once

#include <vector>

namespace kiln::asr {

/// `input` at `from_rate` Hz resampled to `to_rate` Hz. Returns the input
/// unchanged when the rates are equal.
std::vector<float> resample(const std::vector<float>& input, int from_rate, int to_rate);

}  // namespace kiln::asr
