// The element-wise step after cuFFT has run (kernels/fft_kernel.cu): ATen's
// normalisation (a multiply by 1/sqrt(n) or 1/n) and, for a two-sided
// real-to-complex result, the half cuFFT does not compute, filled from the
// half it does by conjugate symmetry (ATen's _fft_fill_with_conjugate_symmetry_).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/error.h"

namespace kiln::cudadev {

/// Which elements of the result come from the other half of the spectrum.
struct FftSymmetry {
  bool fill = false;       ///< false: every element of dst is read from src at the same index
  int last_dim = 0;        ///< the halved dimension (the last transformed one)
  int64_t half = 0;        ///< elements [0, half) of last_dim are in src; the rest are mirrored
  uint32_t mirrored = 0;   ///< bit d set: dimension d is transformed, so its index mirrors as (n - i) % n
};

/// dst[i] = scale * src[i] for every index i of dst (complex64, or complex128
/// when `is_double`), src and dst described by their own strides over dst's
/// sizes (src_index.sizes equal dst_index.sizes). With symmetry.fill, an index
/// whose last_dim coordinate is >= half reads the conjugate of src at the
/// mirrored index instead. src may equal dst only without symmetry.fill.
Error launch_fft_finish(const void* src, const StridedIndexer& src_index, void* dst, const StridedIndexer& dst_index,
                        bool is_double, double scale, const FftSymmetry& symmetry, cudaStream_t stream);

}  // namespace kiln::cudadev
