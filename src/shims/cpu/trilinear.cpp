// aoti_torch_cpu__trilinear: the contraction behind nn.Bilinear. i1, i2 and
// i3 are unsqueezed at the dims in expand1/2/3 to one common rank, broadcast,
// multiplied, and summed over sumdim (those dims are dropped). unroll_dim
// only picks ATen's loop order and does not change the result. One dtype for
// all three (as ATen); integers wrap in int64, floats sum in double, complex
// in complex<double>.
#include <bitset>
#include <string>
#include <type_traits>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/parallel_for.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

constexpr int64_t kMaxDims = 64;

// Positions of a dim list in [0, total) as a bitset, or an error for a bad or repeated dim.
Result<std::bitset<kMaxDims>> dim_set(const int64_t* ptr, int64_t len, int64_t total, const char* name) {
  KILN_ASSIGN_OR_RETURN(std::span<const int64_t> dims, aoti::int_array_arg(ptr, len, name));
  std::bitset<kMaxDims> set;
  for (int64_t d : dims) {
    KILN_ASSIGN_OR_RETURN(int64_t w, wrap_dim(d, total, name));
    if (set[static_cast<size_t>(w)])
      return aoti::invalid(std::string("argument '") + name + "' repeats dim " + std::to_string(d));
    set[static_cast<size_t>(w)] = true;
  }
  return set;
}

struct Operand {
  const Tensor* t;
  std::vector<int64_t> size;    // per common dim (1 where expanded)
  std::vector<int64_t> stride;  // in its contiguous buffer; 0 where size is 1
};

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__trilinear(AtenTensorHandle i1, AtenTensorHandle i2, AtenTensorHandle i3,
                                                          const int64_t* expand1, int64_t expand1_len_,
                                                          const int64_t* expand2, int64_t expand2_len_,
                                                          const int64_t* expand3, int64_t expand3_len_,
                                                          const int64_t* sumdim, int64_t sumdim_len_,
                                                          int64_t unroll_dim, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu__trilinear", [&]() -> Error {
    const char* names[3] = {"i1", "i2", "i3"};
    const char* expand_names[3] = {"expand1", "expand2", "expand3"};
    const AtenTensorHandle handles[3] = {i1, i2, i3};
    const int64_t* expands[3] = {expand1, expand2, expand3};
    const int64_t expand_lens[3] = {expand1_len_, expand2_len_, expand3_len_};
    Tensor* t[3];
    for (int i = 0; i < 3; ++i) {
      KILN_ASSIGN_OR_RETURN(t[i], cpu_tensor_arg(handles[i], names[i]));
      if (expand_lens[i] < 0)
        return aoti::invalid(std::string("argument '") + expand_names[i] + "' has negative length");
    }
    const DType dt = t[0]->dtype();
    KILN_RETURN_IF_ERROR(same_dtype(*t[1], dt, "i2"));
    KILN_RETURN_IF_ERROR(same_dtype(*t[2], dt, "i3"));
    if (dt == DType::Bool || element_kind(dt) == ElementKind::Unsupported)
      return set_error(Error::NotSupported, std::string("dtype ") + dtype_name(dt) + " is not supported");
    const int64_t total = t[0]->dim() + expand1_len_;
    if (total > kMaxDims) return aoti::invalid("too many dimensions");
    Operand ops[3];
    for (int i = 0; i < 3; ++i) {
      if (t[i]->dim() + expand_lens[i] != total)
        return aoti::invalid(std::string("argument '") + names[i] + "' " + t[i]->describe() + " with " +
                             expand_names[i] + " does not reach rank " + std::to_string(total));
      KILN_ASSIGN_OR_RETURN(std::bitset<kMaxDims> ex, dim_set(expands[i], expand_lens[i], total, expand_names[i]));
      const std::vector<int64_t> cs = contiguous_strides(t[i]->sizes());
      ops[i].t = t[i];
      int64_t own = 0;
      for (int64_t d = 0; d < total; ++d) {
        if (ex[static_cast<size_t>(d)]) {
          ops[i].size.push_back(1);
          ops[i].stride.push_back(0);
        } else {
          const int64_t s = t[i]->size(own);
          ops[i].size.push_back(s);
          ops[i].stride.push_back(s == 1 ? 0 : cs[static_cast<size_t>(own)]);
          ++own;
        }
      }
    }
    KILN_ASSIGN_OR_RETURN(std::bitset<kMaxDims> sum, dim_set(sumdim, sumdim_len_, total, "sumdim"));
    (void)unroll_dim;
    std::vector<int64_t> out_dims, sum_dims, common(static_cast<size_t>(total));
    for (int64_t d = 0; d < total; ++d) {
      int64_t s = 1;
      for (const Operand& op : ops) {
        const int64_t z = op.size[static_cast<size_t>(d)];
        if (z != 1 && s != 1 && z != s)
          return aoti::invalid("sizes of i1, i2, i3 do not broadcast at dim " + std::to_string(d));
        if (z != 1) s = z;
      }
      common[static_cast<size_t>(d)] = s;
      (sum[static_cast<size_t>(d)] ? sum_dims : out_dims).push_back(d);
    }
    std::vector<int64_t> out_sizes;
    for (int64_t d : out_dims) out_sizes.push_back(common[static_cast<size_t>(d)]);
    KILN_ASSIGN_OR_RETURN(Tensor result, new_cpu_tensor(out_sizes, dt));
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
          off += (rem % common[d]) * ops[i].stride[d];
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
            b0 += x * ops[0].stride[d];
            b1 += x * ops[1].stride[d];
            b2 += x * ops[2].stride[d];
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
