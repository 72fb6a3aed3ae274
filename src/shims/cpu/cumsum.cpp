// aoti_torch_cpu_cumsum, aoti_torch_cpu_cumprod: the running sum or product
// along `dim` (position ids from attention masks, prefix offsets, cumulative
// probabilities). As ATen: the result dtype is `dtype` when given, else the
// input's, with integers and bool widened to int64; the input is read as the
// result's kind and accumulated in int64, double or complex<double>; the
// result is a new contiguous tensor.
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/strided_index.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

enum class Scan { Sum, Product };

template <typename T>
void scan_lines(std::vector<T>& v, const DimSplit& s, Scan kind) {
  for (int64_t line = 0; line < s.lines(); ++line) {
    const int64_t start = s.line_start(line);
    T acc = kind == Scan::Sum ? T(0) : T(1);
    for (int64_t i = 0; i < s.size; ++i) {
      T& x = v[static_cast<size_t>(start + i * s.inner)];
      acc = kind == Scan::Sum ? acc + x : acc * x;
      x = acc;
    }
  }
}

AOTITorchError cumulative(const char* fn, AtenTensorHandle self_h, int64_t dim, const int32_t* dtype_code,
                 AtenTensorHandle* ret0, Scan kind) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self->dim()));
    KILN_ASSIGN_OR_RETURN(std::optional<DType> requested, optional_dtype_arg(dtype_code, "dtype"));
    const DType out_dtype = requested ? *requested : (is_integral(self->dtype()) ? DType::Int64 : self->dtype());
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(self->sizes(), out_dtype));
    const DimSplit split = DimSplit::of(self->sizes(), self->dim() == 0 ? -1 : d);
    KILN_RETURN_IF_ERROR(visit_kind(out_dtype, [&](auto tag) -> Error {
      using T = decltype(tag);
      std::vector<T> values = read_elements<T>(*self);
      scan_lines(values, split, kind);
      write_elements(values.data(), out);
      return Error::Ok;
    }));
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype,
                                                      AtenTensorHandle* ret0) {
  return cumulative("aoti_torch_cpu_cumsum", self, dim, dtype, ret0, Scan::Sum);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cumprod(AtenTensorHandle self, int64_t dim, int32_t* dtype,
                                                       AtenTensorHandle* ret0) {
  return cumulative("aoti_torch_cpu_cumprod", self, dim, dtype, ret0, Scan::Product);
}

}  // extern "C"
