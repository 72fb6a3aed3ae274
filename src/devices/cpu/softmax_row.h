// softmax_in_place: the softmax of one row of float32 scores, the inner loop of
// the CPU attention op.
//
// libkiln is built for baseline x86-64, where std::exp is a scalar libm call and
// a float max/sum loop is not vectorised. This routine is compiled for AVX-512,
// AVX2 and baseline (the first call picks one for the running CPU) with its own
// exp, written so the compiler vectorises it: 2^k * e^r with
// k = round(x / ln 2), |r| <= ln(2)/2 and e^r by its degree-7 Taylor
// polynomial (relative error below 1e-7, i.e. about float rounding).
#pragma once

#include <cstdint>

namespace kiln::cpu {

/// row[0..n) <- exp(row - max) / sum; returns max + log(sum) (the row's
/// logsumexp). A row whose entries are all -inf becomes 0 and returns -inf.
/// n >= 1.
float softmax_in_place(float* row, int64_t n) noexcept;

}  // namespace kiln::cpu
