// aoti_torch_cpu_grouped_mm: Kiln's op kiln::grouped_mm (python/kiln/exporter/kiln_ops.py),
// the experts' product of a Mixture-of-Experts layer, which the export pass
// passes/grouped_mm.py puts in place of aten._grouped_mm and
// transformers::grouped_mm_fallback. Rows of input [S, K] are sorted by group;
// offs[g] is the end row of group g, so rows offs[g-1]..offs[g] give
// input[rows] @ weight[g], and rows from offs[G-1] on are zero.
//
// Each group is one strided GEMM on the tensors' own memory (float32/float64
// through BLAS; bfloat16/float16 widened to float32 and rounded once on store,
// as mm.cpp does). offs comes from the model's routing, so it is checked
// before any row is touched: a value out of order or past S is an error
// naming it, never a read outside the input.
#include <cstring>
#include <string>
#include <vector>

#include "shims/cpu/cpu_shims.h"
#include "devices/cpu/element_buffer.h"
#include "devices/cpu/float_io.h"
#include "devices/cpu/gemm.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::aoti;
using namespace kiln::cpu;

namespace {

struct GroupedArgs {
  Tensor* input;
  Tensor* weight;
  std::vector<int64_t> ends;  // offs, checked
  int64_t s, k, n;
};

Result<GroupedArgs> check_args(AtenTensorHandle input_h, AtenTensorHandle weight_h, AtenTensorHandle offs_h) {
  KILN_ASSIGN_OR_RETURN(Tensor * input, cpu_tensor_arg(input_h, "input"));
  KILN_ASSIGN_OR_RETURN(Tensor * weight, cpu_tensor_arg(weight_h, "weight"));
  KILN_ASSIGN_OR_RETURN(Tensor * offs, cpu_tensor_arg(offs_h, "offs"));
  const DType dt = input->dtype();
  if (dt != DType::Float32 && dt != DType::Float64 && dt != DType::BFloat16 && dt != DType::Float16)
    return set_error(Error::NotSupported, std::string("grouped_mm: dtype ") + dtype_name(dt) +
                                              " is not supported (float32, float64, bfloat16, float16)");
  KILN_RETURN_IF_ERROR(same_dtype(*weight, dt, "weight"));
  if (offs->dtype() != DType::Int32 && offs->dtype() != DType::Int64)
    return invalid("grouped_mm: offs " + offs->describe() + " is not int32 or int64");
  if (input->dim() != 2 || weight->dim() != 3 || offs->dim() != 1)
    return invalid("grouped_mm: expected input [S, K], weight [G, K, N], offs [G]; got input " +
                   input->describe() + ", weight " + weight->describe() + ", offs " + offs->describe());
  if (weight->size(1) != input->size(1) || offs->size(0) != weight->size(0))
    return invalid("grouped_mm: input " + input->describe() + ", weight " + weight->describe() + " and offs " +
                   offs->describe() + " disagree in K or the number of groups");
  GroupedArgs a{input, weight, read_elements<int64_t>(*offs), input->size(0), input->size(1), weight->size(2)};
  int64_t start = 0;
  for (size_t g = 0; g < a.ends.size(); ++g) {
    const int64_t end = a.ends[g];
    if (end < start || end > a.s)
      return invalid("grouped_mm: offs[" + std::to_string(g) + "] = " + std::to_string(end) + " is not in [" +
                     std::to_string(start) + ", " + std::to_string(a.s) +
                     "]: offs must be non-decreasing end rows of the input's groups");
    start = end;
  }
  return a;
}

template <typename T>
Error group_product(const GroupedArgs& a, const Tensor& out, int64_t g, int64_t start, int64_t end) {
  const Tensor& x = *a.input;
  const Tensor& w = *a.weight;
  const MatrixView<const T> xa{static_cast<const T*>(x.data_ptr()) + start * x.stride(0), end - start, a.k,
                               x.stride(0), x.stride(1)};
  const MatrixView<const T> wb{static_cast<const T*>(w.data_ptr()) + g * w.stride(0), a.k, a.n, w.stride(1),
                               w.stride(2)};
  const MatrixView<T> c{static_cast<T*>(out.data_ptr()) + start * a.n, end - start, a.n, a.n, 1};
  return gemm<T>(xa, wb, c, T(1), T(0));
}

// bfloat16/float16: the group's rows and weight widened to float32, rounded once on store.
Error widened_group_product(const GroupedArgs& a, const Tensor& out, int64_t g, int64_t start, int64_t end) {
  const Tensor& x = *a.input;
  const Tensor& w = *a.weight;
  const int64_t rows = end - start;
  const Tensor xs(x.storage(), x.dtype(), {rows, a.k}, {x.stride(0), x.stride(1)},
                  x.storage_offset() + start * x.stride(0));
  const Tensor wg(w.storage(), w.dtype(), {a.k, a.n}, {w.stride(1), w.stride(2)},
                  w.storage_offset() + g * w.stride(0));
  const Tensor os(out.storage(), out.dtype(), {rows, a.n}, {a.n, 1}, out.storage_offset() + start * a.n);
  const std::vector<float> fx = to_floats(xs), fw = to_floats(wg);
  std::vector<float> fo(static_cast<size_t>(rows * a.n));
  KILN_RETURN_IF_ERROR(gemm<float>({fx.data(), rows, a.k, a.k, 1}, {fw.data(), a.k, a.n, a.n, 1},
                                   {fo.data(), rows, a.n, a.n, 1}, 1.0f, 0.0f));
  store_floats(fo.data(), os);
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_grouped_mm(AtenTensorHandle input, AtenTensorHandle weight,
                                                          AtenTensorHandle offs, AtenTensorHandle* ret0) {
  return guarded("aoti_torch_cpu_grouped_mm", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(GroupedArgs a, check_args(input, weight, offs));
    const std::vector<int64_t> sizes = {a.s, a.n};
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(sizes, a.input->dtype()));
    const DType dt = out.dtype();
    const size_t row_bytes = static_cast<size_t>(a.n) * element_size(dt);
    auto* base = static_cast<unsigned char*>(out.data_ptr());
    // All-zero bytes are 0.0 in every float dtype. Rows past the last group are
    // zero, as transformers' fallback leaves them; with K == 0 every row is.
    const int64_t last = a.ends.empty() || a.k == 0 ? 0 : a.ends.back();
    if (a.s > last) std::memset(base + last * row_bytes, 0, static_cast<size_t>(a.s - last) * row_bytes);
    int64_t start = 0;
    for (int64_t g = 0; g < static_cast<int64_t>(a.ends.size()) && a.k > 0; ++g) {
      const int64_t end = a.ends[static_cast<size_t>(g)];
      if (end > start && a.n > 0) {
        if (dt == DType::Float32) {
          KILN_RETURN_IF_ERROR(group_product<float>(a, out, g, start, end));
        } else if (dt == DType::Float64) {
          KILN_RETURN_IF_ERROR(group_product<double>(a, out, g, start, end));
        } else {
          KILN_RETURN_IF_ERROR(widened_group_product(a, out, g, start, end));
        }
      }
      start = end;
    }
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
