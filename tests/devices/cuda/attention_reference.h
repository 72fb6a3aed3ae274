// A double-precision host softmax(Q K^T * scale + bias) V, the reference for
// the CUDA attention tests (shim-level and kernel-level).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace kiln_test {

struct Shape {
  int64_t B, Hq, Hk, L, S, E, Ev;
};

// Reference attention; bias (optional) is given densely as [B, Hq, L, S]
// (-inf = masked). Returns out [B, Hq, L, Ev] and lse [B, Hq, L].
inline void ref_attention(const Shape& s, const std::vector<float>& q, const std::vector<float>& k,
                          const std::vector<float>& v, const std::vector<float>& bias, bool causal,
                          double scale, std::vector<float>& out, std::vector<float>& lse) {
  out.assign(static_cast<size_t>(s.B * s.Hq * s.L * s.Ev), 0.0f);
  lse.assign(static_cast<size_t>(s.B * s.Hq * s.L), 0.0f);
  const int64_t rep = s.Hq / s.Hk;
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.Hq; ++h)
      for (int64_t i = 0; i < s.L; ++i) {
        const int64_t hk = h / rep;
        std::vector<double> sc(static_cast<size_t>(s.S));
        double mx = -INFINITY;
        for (int64_t j = 0; j < s.S; ++j) {
          double d = 0;
          for (int64_t e = 0; e < s.E; ++e)
            d += double(q[((b * s.Hq + h) * s.L + i) * s.E + e]) * k[((b * s.Hk + hk) * s.S + j) * s.E + e];
          d *= scale;
          if (!bias.empty()) d += bias[((b * s.Hq + h) * s.L + i) * s.S + j];
          if (causal && j > i) d = -INFINITY;
          sc[j] = d;
          mx = std::max(mx, d);
        }
        double sum = 0;
        for (auto& x : sc) {
          x = mx == -INFINITY ? 0.0 : std::exp(x - mx);
          sum += x;
        }
        lse[(b * s.Hq + h) * s.L + i] = sum > 0 ? static_cast<float>(mx + std::log(sum)) : -INFINITY;
        for (int64_t e = 0; e < s.Ev; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < s.S; ++j) acc += sc[j] * v[((b * s.Hk + hk) * s.S + j) * s.Ev + e];
          out[((b * s.Hq + h) * s.L + i) * s.Ev + e] = sum > 0 ? static_cast<float>(acc / sum) : 0.0f;
        }
      }
}

}  // namespace kiln_test
