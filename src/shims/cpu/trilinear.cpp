// aoti_torch_cpu__trilinear: the contraction behind nn.Bilinear. i1, i2 and
// i3 are unsqueezed at the dims in expand1/2/3 to one common rank, broadcast,
// multiplied, and summed over sumdim (those dims are dropped), with the
// checks the CUDA op shares (shims/common/trilinear_args.h). unroll_dim must
// be a dim of the common rank but only picks ATen's loop order. One dtype for
// all three (as ATen); integers wrap in int64, floats sum in double, complex
// in complex<double>.
#include <string>
#include <type_traits>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/parallel_for.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/common/trilinear_args.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace tri = kiln::aoti::trilinear;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__trilinear(AtenTensorHandle i1, AtenTensorHandle i2, AtenTensorHandle i3,
                                                          const int64_t* expand1, int64_t expand1_len_,
                                                          const int64_t* expand2, int64_t expand2_len_,
                                                          const int64_t* expand3, int64_t expand3_len_,
                                                          const int64_t* sumdim, int64_t sumdim_len_,
                                                          int64_t unroll_dim, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu__trilinear", [&]() -> Error {
    const char* names[3] = {"i1", "i2", "i3"};
    const AtenTensorHandle handles[3] = {i1, i2, i3};
    const int64_t* const expands[3] = {expand1, expand2, expand3};
    const int64_t expand_lens[3] = {expand1_len_, expand2_len_, expand3_len_};
    Tensor* t[3];
    for (int i = 0; i < 3; ++i) {
      KILN_ASSIGN_OR_RETURN(t[i], cpu_tensor_arg(handles[i], names[i]));
    }
    const DType dt = t[0]->dtype();
    KILN_RETURN_IF_ERROR(same_dtype(*t[1], dt, "i2"));
    KILN_RETURN_IF_ERROR(same_dtype(*t[2], dt, "i3"));
    if (dt == DType::Bool || element_kind(dt) == ElementKind::Unsupported)
      return set_error(Error::NotSupported, std::string("dtype ") + dtype_name(dt) + " is not supported");
    KILN_ASSIGN_OR_RETURN(tri::Plan plan, tri::plan({t[0]->sizes(), t[1]->sizes(), t[2]->sizes()}, expands,
                                                    expand_lens, sumdim, sumdim_len_, unroll_dim));
    // Strides in each operand's row-major buffer (read_elements).
    std::vector<int64_t> stride[3];
    for (int i = 0; i < 3; ++i) {
      const std::vector<int64_t> cs = contiguous_strides(t[i]->sizes());
      stride[i] = tri::common_strides(plan, i, t[i]->sizes(), cs);
    }
    const std::vector<int64_t>& common = plan.common;
    const std::vector<int64_t>& out_dims = plan.out_dims;
    const std::vector<int64_t>& sum_dims = plan.sum_dims;
    KILN_ASSIGN_OR_RETURN(Tensor result, new_cpu_tensor(plan.out_sizes, dt));
    // Offsets of every summed position in each operand.
    int64_t terms = 1;
    for (int64_t d : sum_dims) terms *= common[static_cast<size_t>(d)];
    std::vector<int64_t> term_off[3];
    for (int i = 0; i < 3; ++i) {
      term_off[i].assign(static_cast<size_t>(terms), 0);
      for (int64_t k = 0; k < terms; ++k) {
        int64_t rem = k, off = 0;
        for (size_t j = sum_dims.size(); j-- > 0;) {
          const size_t d = static_cast<size_t>(sum_dims[j]);
          off += (rem % common[d]) * stride[i][d];
          rem /= common[d];
        }
        term_off[i][static_cast<size_t>(k)] = off;
      }
    }
    const int64_t outputs = result.numel();
    KILN_RETURN_IF_ERROR(visit_kind(dt, [&](auto tag) -> Error {
      using T = decltype(tag);
      const std::vector<T> v0 = read_elements<T>(*t[0]), v1 = read_elements<T>(*t[1]), v2 = read_elements<T>(*t[2]);
      std::vector<T> y(static_cast<size_t>(outputs));
      KILN_RETURN_IF_ERROR(parallel_for(outputs, 64, [&](int64_t begin, int64_t end) -> Error {
        for (int64_t o = begin; o < end; ++o) {
          int64_t rem = o, b0 = 0, b1 = 0, b2 = 0;
          for (size_t j = out_dims.size(); j-- > 0;) {
            const size_t d = static_cast<size_t>(out_dims[j]);
            const int64_t x = rem % common[d];
            rem /= common[d];
            b0 += x * stride[0][d];
            b1 += x * stride[1][d];
            b2 += x * stride[2][d];
          }
          T acc = T(0);
          for (size_t k = 0; k < static_cast<size_t>(terms); ++k)
            acc = wrap_add(acc, wrap_mul(wrap_mul(v0[b0 + term_off[0][k]], v1[b1 + term_off[1][k]]), v2[b2 + term_off[2][k]]));
          y[static_cast<size_t>(o)] = acc;
        }
        return Error::Ok;
      }));
      write_elements(y.data(), result);
      return Error::Ok;
    }));
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

}  // extern "C"
