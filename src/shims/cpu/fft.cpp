// aoti_torch_cpu__fft_r2c, aoti_torch_cpu__fft_c2c: the n-dimensional DFT
// behind torch.fft (rfft/fft/ifft/stft...) over the dimensions `dim`, in
// double precision (devices/cpu/fft.h) and rounded to the result's dtype.
// `normalization` is ATen's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n,
// n being the product of the transformed sizes. r2c takes float32/float64
// and gives complex64/complex128, halving the last transformed dimension to
// n/2 + 1 when onesided. The result's strides are those of ATen's CPU (MKL)
// kernel: untransformed dimensions outermost in the input's stride order,
// then the transformed ones (sorted by input stride, except r2c's last).
// Negative dims are wrapped (ATen's kernel expects callers to have done so).
#include "devices/cpu/fft.h"

#include <algorithm>
#include <cmath>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/strided_index.h"
#include "shims/common/fft_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

// The strides ATen's MKL path gives its result (see the file comment).
std::vector<int64_t> fft_out_strides(const Tensor& self, std::span<const int64_t> out_sizes,
                                     const std::vector<int64_t>& dims, bool keep_last) {
  const int64_t nd = self.dim();
  const auto& st = self.strides();
  auto by_stride = [&](int64_t a, int64_t b) {
    return st[static_cast<size_t>(a)] > st[static_cast<size_t>(b)];
  };
  std::vector<int64_t> sorted = dims;
  std::stable_sort(sorted.begin(), sorted.end() - (keep_last && !sorted.empty() ? 1 : 0), by_stride);
  std::vector<int64_t> batch;
  for (int64_t d = 0; d < nd; ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) batch.push_back(d);
  std::stable_sort(batch.begin(), batch.end(), by_stride);
  std::vector<int64_t> strides(static_cast<size_t>(nd));
  int64_t s = 1;
  for (size_t i = sorted.size(); i-- > 0;) {
    strides[static_cast<size_t>(sorted[i])] = s;
    s *= out_sizes[static_cast<size_t>(sorted[i])];
  }
  for (size_t i = batch.size(); i-- > 0;) {
    strides[static_cast<size_t>(batch[i])] = s;
    s *= out_sizes[static_cast<size_t>(batch[i])];
  }
  return strides;
}

Error finish(std::vector<Complex>& values, double scale, const Tensor& self, std::vector<int64_t> out_sizes,
             const std::vector<int64_t>& dims, bool keep_last, DType out_dtype, AtenTensorHandle* ret0) {
  if (scale != 1.0)
    for (Complex& v : values) v *= scale;
  const std::vector<int64_t> strides = fft_out_strides(self, out_sizes, dims, keep_last);
  KILN_ASSIGN_OR_RETURN(Tensor out,
                        Tensor::empty_strided(out_sizes, strides, out_dtype, Device{DeviceType::CPU, 0}));
  write_elements(values.data(), out);
  return return_tensor(std::move(out), ret0, "ret0");
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__fft_r2c(AtenTensorHandle self, const int64_t* dim,
                                                        int64_t dim_len_, int64_t normalization,
                                                        int32_t onesided, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu__fft_r2c", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * x, cpu_tensor_arg(self, "self"));
    if (x->dtype() != DType::Float32 && x->dtype() != DType::Float64)
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(x->dtype()) +
                           ", expected float32 or float64");
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, aoti::fft_dims_arg(x->sizes(), dim, dim_len_));
    if (dims.empty()) return aoti::invalid("argument 'dim' is empty; r2c needs at least one dimension");
    KILN_ASSIGN_OR_RETURN(double scale, aoti::fft_norm_scale(normalization, x->sizes(), dims));
    std::vector<Complex> values = read_elements<Complex>(*x);
    fft_dims(values, x->sizes(), dims, true);
    std::vector<int64_t> out_sizes = x->sizes();
    const int64_t last = dims.back();
    if (onesided) {
      const DimSplit full = DimSplit::of(x->sizes(), last);
      const int64_t half = full.size / 2 + 1;
      out_sizes[static_cast<size_t>(last)] = half;
      std::vector<Complex> kept(static_cast<size_t>(full.outer * half * full.inner));
      for (int64_t o = 0; o < full.outer; ++o)
        for (int64_t i = 0; i < half; ++i)
          for (int64_t j = 0; j < full.inner; ++j)
            kept[static_cast<size_t>((o * half + i) * full.inner + j)] =
                values[static_cast<size_t>((o * full.size + i) * full.inner + j)];
      values = std::move(kept);
    }
    const DType out_dtype = x->dtype() == DType::Float32 ? DType::Complex64 : DType::Complex128;
    return finish(values, scale, *x, out_sizes, dims, true, out_dtype, ret0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__fft_c2c(AtenTensorHandle self, const int64_t* dim,
                                                        int64_t dim_len_, int64_t normalization,
                                                        int32_t forward, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu__fft_c2c", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * x, cpu_tensor_arg(self, "self"));
    if (!is_complex(x->dtype()))
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(x->dtype()) +
                           ", expected complex64 or complex128");
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, aoti::fft_dims_arg(x->sizes(), dim, dim_len_));
    KILN_ASSIGN_OR_RETURN(double scale, aoti::fft_norm_scale(normalization, x->sizes(), dims));
    std::vector<Complex> values = read_elements<Complex>(*x);
    fft_dims(values, x->sizes(), dims, forward != 0);
    return finish(values, scale, *x, x->sizes(), dims, false, x->dtype(), ret0);
  });
}

}  // extern "C"
