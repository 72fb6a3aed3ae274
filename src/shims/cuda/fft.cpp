// aoti_torch_cuda__fft_r2c, aoti_torch_cuda__fft_c2c: the n-dimensional DFT
// behind torch.fft on CUDA through cuFFT (opened lazily, libraries/cufft_api.h),
// with the CPU op's argument rules and messages (src/shims/cpu/fft.cpp).
//
// The results carry the strides of torch 2.11's CUDA kernels
// (aten/src/ATen/native/cuda/SpectralOps.cpp), which a model library compiled
// for CUDA indexes them with. ATen runs a transform as one or more passes of
// at most 3 dimensions (_exec_fft); each pass orders the untransformed
// dimensions outermost by decreasing input stride and the transformed ones
// innermost in the order the pass lists them, and writes a dense result in
// that order. The passes:
//   c2c - repeatedly, the (up to) 3 remaining dimensions of smallest stride in
//         the current intermediate, listed by decreasing stride;
//   r2c - `dim` in one pass as given, unless it has more than 3 dimensions or
//         starts with (0, 1): then the last dimension alone, followed by c2c
//         passes over the others as above. A real input not aligned like its
//         complex type is first copied with the last transformed dimension
//         innermost, and those copy's strides order the first pass. A
//         two-sided result from the multi-pass path is contiguous.
// Kiln computes each pass the same way: the input gathered dense in the
// pass's order (unless it already is), one cuFFT plan over the collapsed
// batch, the output written dense in that order. The normalisation and the
// two-sided half (conjugate symmetry) follow in one kernel (fft_kernel.cu).
//
// float16 and bfloat16 are refused (torch 2.11's CUDA kernel takes float16
// only for power-of-two sizes, into complex32, which Kiln has no op for; it
// refuses bfloat16).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "devices/cuda/device/strided_copy.h"
#include "devices/cuda/kernels/fft_kernel.h"
#include "devices/cuda/libraries/cufft_api.h"
#include "shims/common/fft_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

// cuFFT transforms at most 3 dimensions in one plan (ATen's cufft_max_ndim).
constexpr size_t kMaxPassDims = 3;

// ---- ATen's layout of each pass -------------------------------------------

// One _exec_fft call: which dimensions it transforms, the order it lays the
// data out in, and the strides of its (dense) result.
struct Pass {
  std::vector<int64_t> dims;         ///< transformed, in the pass's order
  std::vector<int> order;            ///< all dimensions, outermost first: batch, then `dims`
  std::vector<int64_t> out_sizes;    ///< the pass's result sizes
  std::vector<int64_t> out_strides;  ///< dense in `order`
};

// The order _exec_fft permutes the input to. The untransformed dimensions are
// split off with std::partition and then sorted with std::sort; neither is
// stable in general, and the order they leave dimensions of equal stride in
// (size-1 dimensions) decides the result's strides, so this follows what
// libstdc++ (torch's Linux build) does: its bidirectional partition, then an
// insertion sort, which is stable, for the at most 16 elements of a shape.
std::vector<int> exec_order(std::span<const int64_t> in_strides, std::span<const int64_t> dims) {
  const size_t nd = in_strides.size();
  std::vector<int> perm(nd);
  std::vector<bool> transformed(nd, false);
  for (int64_t d : dims) transformed[static_cast<size_t>(d)] = true;
  for (size_t i = 0; i < nd; ++i) perm[i] = static_cast<int>(i);
  size_t first = 0, last = nd;
  const auto is_batch = [&](int d) { return !transformed[static_cast<size_t>(d)]; };
  while (true) {
    while (first != last && is_batch(perm[first])) ++first;
    if (first == last) break;
    --last;
    while (first != last && !is_batch(perm[last])) --last;
    if (first == last) break;
    std::swap(perm[first], perm[last]);
    ++first;
  }
  const size_t batch_end = first;
  std::stable_sort(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(batch_end), [&](int a, int b) {
    return in_strides[static_cast<size_t>(a)] > in_strides[static_cast<size_t>(b)];
  });
  for (size_t i = 0; i < dims.size(); ++i) perm[batch_end + i] = static_cast<int>(dims[i]);
  return perm;
}

Pass plan_pass(std::span<const int64_t> in_strides, std::vector<int64_t> dims, std::vector<int64_t> out_sizes) {
  Pass p;
  p.order = exec_order(in_strides, dims);
  p.out_strides = dense_strides_in_order(out_sizes, p.order);
  p.dims = std::move(dims);
  p.out_sizes = std::move(out_sizes);
  return p;
}

// The dimensions of `remaining` ATen's c2c loop transforms next (the up to 3
// of smallest stride in `strides`, listed by decreasing stride), removed
// from `remaining`.
std::vector<int64_t> next_c2c_dims(std::vector<int64_t>& remaining, std::span<const int64_t> strides) {
  std::stable_sort(remaining.begin(), remaining.end(), [&](int64_t a, int64_t b) {
    return strides[static_cast<size_t>(a)] > strides[static_cast<size_t>(b)];
  });
  const size_t take = std::min(kMaxPassDims, remaining.size());
  std::vector<int64_t> dims(remaining.end() - static_cast<std::ptrdiff_t>(take), remaining.end());
  remaining.resize(remaining.size() - take);
  return dims;
}

// ATen's use_optimized_cufft_path: r2c in one pass.
bool r2c_in_one_pass(const std::vector<int64_t>& dims) {
  return dims.size() <= kMaxPassDims && !(dims.size() >= 2 && dims[0] == 0 && dims[1] == 1);
}

// ---- cuFFT plans ------------------------------------------------------------

// A plan for `batch` dense transforms of sizes n (inembed/onembed null: cuFFT's
// basic layout), kept for reuse: a model calls the same shapes every run.
struct PlanKey {
  int device = 0;
  cufftType type = CUFFT_C2C;
  int rank = 0;
  long long n[kMaxPassDims] = {};
  long long batch = 0;
  bool operator==(const PlanKey& o) const {
    return device == o.device && type == o.type && rank == o.rank && batch == o.batch &&
           std::equal(n, n + kMaxPassDims, o.n);
  }
};

struct CachedPlan {
  PlanKey key;
  cufftHandle handle = 0;
  size_t workspace = 0;
};

// The cache and the use of a plan (stream, work area, execution) are behind
// one lock: a cuFFT plan holds its stream and work area as state, so two
// threads must not interleave setting and executing it.
std::mutex& plan_mutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}

// Bounded so that a model with ever-changing shapes (dynamic dimensions)
// does not accumulate plans (and their device memory); the oldest goes first.
constexpr size_t kMaxCachedPlans = 64;

std::vector<CachedPlan>& plan_cache() {
  static std::vector<CachedPlan>* cache = new std::vector<CachedPlan>;
  return *cache;
}

// Called with plan_mutex() held.
Result<CachedPlan> find_or_make_plan(const CufftApi& api, const PlanKey& key) {
  std::vector<CachedPlan>& cache = plan_cache();
  for (const CachedPlan& p : cache)
    if (p.key == key) return p;
  cufftHandle handle = 0;
  KILN_RETURN_IF_ERROR(cufft_status(api.create(&handle), "cufftCreate"));
  // The work area comes from Kiln's caching allocator at each execution, on
  // the execution's stream, instead of being held by every cached plan.
  Error e = cufft_status(api.set_auto_allocation(handle, 0), "cufftSetAutoAllocation");
  size_t workspace = 0;
  if (e == Error::Ok) {
    long long n[kMaxPassDims];
    std::copy(key.n, key.n + kMaxPassDims, n);
    e = cufft_status(api.make_plan_many(handle, key.rank, n, nullptr, 1, 0, nullptr, 1, 0, key.type, key.batch,
                                        &workspace),
                     "cufftMakePlanMany64");
  }
  if (e != Error::Ok) {
    (void)api.destroy(handle);
    return e;
  }
  if (cache.size() >= kMaxCachedPlans) {
    (void)api.destroy(cache.front().handle);
    cache.erase(cache.begin());
  }
  cache.push_back(CachedPlan{key, handle, workspace});
  return cache.back();
}

// ---- Running a pass -----------------------------------------------------------

// A dense or strided view of device memory in the op's dimension numbering.
struct View {
  const void* data = nullptr;
  DType dtype = DType::Complex64;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Runs `pass` on `in` (real for R2C, else complex), writing its result dense
// in the pass's order at `out` (for R2C, the one-sided result cuFFT computes).
Error run_pass(const CufftApi& api, const Pass& pass, const View& in, void* out, bool r2c, bool forward,
               int device, cudaStream_t stream) {
  // cuFFT's basic layout needs the input dense in the pass's order; real
  // input must also be aligned as its complex type (as ATen requires).
  const size_t elem = element_size(in.dtype);
  const void* src = in.data;
  DeviceBuffer gathered;
  if (!is_dense_in_order(in.sizes, in.strides, pass.order) || !aligned(src, r2c ? 2 * elem : elem)) {
    const std::vector<int64_t> dense = dense_strides_in_order(in.sizes, pass.order);
    int64_t numel = 1;
    for (int64_t s : in.sizes) numel *= s;
    KILN_ASSIGN_OR_RETURN(gathered, DeviceBuffer::allocate(static_cast<size_t>(numel) * elem, device, stream));
    KILN_RETURN_IF_ERROR(launch_strided_copy(gathered.get(), dense.data(), in.data, in.strides.data(),
                                             in.sizes.data(), static_cast<int64_t>(in.sizes.size()), elem, stream));
    src = gathered.get();
  }
  const bool is_double = in.dtype == DType::Float64 || in.dtype == DType::Complex128;
  PlanKey key;
  key.device = device;
  key.type = r2c ? (is_double ? CUFFT_D2Z : CUFFT_R2C) : (is_double ? CUFFT_Z2Z : CUFFT_C2C);
  key.rank = static_cast<int>(pass.dims.size());
  for (size_t i = 0; i < pass.dims.size(); ++i) key.n[i] = in.sizes[static_cast<size_t>(pass.dims[i])];
  key.batch = 1;
  for (size_t i = 0; i + pass.dims.size() < pass.order.size(); ++i)
    key.batch *= in.sizes[static_cast<size_t>(pass.order[i])];

  std::lock_guard<std::mutex> lock(plan_mutex());
  KILN_ASSIGN_OR_RETURN(CachedPlan plan, find_or_make_plan(api, key));
  DeviceBuffer workspace;
  if (plan.workspace > 0) {
    KILN_ASSIGN_OR_RETURN(workspace, DeviceBuffer::allocate(plan.workspace, device, stream));
  }
  KILN_RETURN_IF_ERROR(cufft_status(api.set_stream(plan.handle, stream), "cufftSetStream"));
  KILN_RETURN_IF_ERROR(cufft_status(api.set_work_area(plan.handle, workspace.get()), "cufftSetWorkArea"));
  // cuFFT does not write its input out of place for these transforms; the
  // casts only satisfy its non-const signatures.
  void* in_ptr = const_cast<void*>(src);
  const int direction = forward ? CUFFT_FORWARD : CUFFT_INVERSE;
  switch (key.type) {
    case CUFFT_R2C:
      return cufft_status(api.exec_r2c(plan.handle, static_cast<cufftReal*>(in_ptr), static_cast<cufftComplex*>(out)),
                          "cufftExecR2C");
    case CUFFT_D2Z:
      return cufft_status(
          api.exec_d2z(plan.handle, static_cast<cufftDoubleReal*>(in_ptr), static_cast<cufftDoubleComplex*>(out)),
          "cufftExecD2Z");
    case CUFFT_Z2Z:
      return cufft_status(api.exec_z2z(plan.handle, static_cast<cufftDoubleComplex*>(in_ptr),
                                       static_cast<cufftDoubleComplex*>(out), direction),
                          "cufftExecZ2Z");
    default:
      return cufft_status(
          api.exec_c2c(plan.handle, static_cast<cufftComplex*>(in_ptr), static_cast<cufftComplex*>(out), direction),
          "cufftExecC2C");
  }
}

int64_t numel_of(std::span<const int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// Runs c2c passes over `remaining` (ATen's loop), starting from `in` (complex),
// the last pass writing into `final_out` (already allocated with the strides
// the last pass gives, see plan_c2c), the others into temporaries.
Error run_c2c_passes(const CufftApi& api, const std::vector<Pass>& passes, View in, void* final_out, bool forward,
                     int device, cudaStream_t stream) {
  DeviceBuffer buffers[2];
  for (size_t i = 0; i < passes.size(); ++i) {
    const Pass& p = passes[i];
    void* out = final_out;
    if (i + 1 < passes.size()) {
      DeviceBuffer& b = buffers[i % 2];
      if (b.get() == nullptr) {
        KILN_ASSIGN_OR_RETURN(
            b, DeviceBuffer::allocate(static_cast<size_t>(numel_of(p.out_sizes)) * element_size(in.dtype), device,
                                      stream));
      }
      out = b.get();
    }
    KILN_RETURN_IF_ERROR(run_pass(api, p, in, out, false, forward, device, stream));
    in.data = out;
    in.sizes = p.out_sizes;
    in.strides = p.out_strides;
  }
  return Error::Ok;
}

// ATen's c2c passes over `dims`, starting from an input with `strides`.
std::vector<Pass> plan_c2c(std::vector<int64_t> remaining, const std::vector<int64_t>& sizes,
                           std::vector<int64_t> strides) {
  std::vector<Pass> passes;
  while (!remaining.empty()) {
    std::vector<int64_t> dims = next_c2c_dims(remaining, strides);
    passes.push_back(plan_pass(strides, std::move(dims), sizes));
    strides = passes.back().out_strides;
  }
  return passes;
}

StridedIndexer indexer_of(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  StridedIndexer ix;
  ix.ndim = static_cast<int>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    ix.sizes[d] = sizes[d];
    ix.strides[d] = strides[d];
  }
  return ix;
}

Error check_rank(const TensorRef& self) {
  // The gather copy and the finishing kernel index at most this many dimensions.
  if (self.dim() > kMaxStridedCopyDims)
    return aoti::invalid("the FFT on CUDA supports tensors of at most " + std::to_string(kMaxStridedCopyDims) +
                         " dimensions, got " + self.describe());
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__fft_r2c(AtenTensorHandle self_h, const int64_t* dim,
                                                         int64_t dim_len_, int64_t normalization, int32_t onesided,
                                                         AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda__fft_r2c", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    if (self.dtype != DType::Float32 && self.dtype != DType::Float64)
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(self.dtype) +
                           ", expected float32 or float64");
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, aoti::fft_dims_arg(self.sizes, dim, dim_len_));
    if (dims.empty()) return aoti::invalid("argument 'dim' is empty; r2c needs at least one dimension");
    KILN_RETURN_IF_ERROR(check_rank(self));
    KILN_ASSIGN_OR_RETURN(double scale, aoti::fft_norm_scale(normalization, self.sizes, dims));
    const DType complex_dtype = self.dtype == DType::Float32 ? DType::Complex64 : DType::Complex128;
    const int64_t last = dims.back();
    const int64_t n_last = self.sizes[static_cast<size_t>(last)];
    const int64_t half = n_last / 2 + 1;
    std::vector<int64_t> onesided_sizes = self.sizes;
    onesided_sizes[static_cast<size_t>(last)] = half;
    const std::vector<int64_t>& out_sizes = onesided ? onesided_sizes : self.sizes;
    // The two-sided half exists only past n/2 + 1 (not for sizes 1 and 2).
    const bool fill = !onesided && half < n_last;

    // The strides ATen's passes see for the input: an input not aligned as
    // its complex type is first copied with the last transformed dimension
    // innermost (movedim, contiguous clone, movedim back).
    std::vector<int64_t> working = self.strides;
    if (!aligned(self.data, 2 * self.element_bytes())) {
      std::vector<int> order;
      for (int64_t d = 0; d < self.dim(); ++d)
        if (d != last) order.push_back(static_cast<int>(d));
      order.push_back(static_cast<int>(last));
      working = dense_strides_in_order(self.sizes, order);
    }

    // ATen's passes: first the real-to-complex one, then any c2c ones.
    const bool one_pass = r2c_in_one_pass(dims);
    const Pass first = plan_pass(working, one_pass ? dims : std::vector<int64_t>{last}, onesided_sizes);
    const std::vector<Pass> rest =
        one_pass ? std::vector<Pass>{}
                 : plan_c2c(std::vector<int64_t>(dims.begin(), dims.end() - 1), onesided_sizes, first.out_strides);
    const Pass& last_pass = rest.empty() ? first : rest.back();
    // The result's strides: the last pass's; for a two-sided result, the
    // one-pass kernel's layout over the full sizes, or contiguous after
    // several passes (ATen copies into a fresh contiguous tensor there).
    std::vector<int64_t> out_strides = last_pass.out_strides;
    if (fill)
      out_strides = one_pass ? plan_pass(working, dims, self.sizes).out_strides : contiguous_strides(self.sizes);

    KILN_ASSIGN_OR_RETURN(const CufftApi* api, cufft());
    KILN_ASSIGN_OR_RETURN(int device, current_device());
    cudaStream_t stream = current_stream(self.device_index);
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor(out_sizes, out_strides, complex_dtype,
                                                      static_cast<int32_t>(DeviceType::CUDA), self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));

    // The one-sided spectrum: in the result itself, or (when the two-sided
    // half is still to be filled) in a temporary the fill reads from.
    DeviceBuffer spectrum;
    void* onesided_out = o.data;
    if (fill) {
      KILN_ASSIGN_OR_RETURN(spectrum,
                            DeviceBuffer::allocate(static_cast<size_t>(numel_of(onesided_sizes)) * o.element_bytes(),
                                                   self.device_index, stream));
      onesided_out = spectrum.get();
    }
    const View in{self.data, self.dtype, self.sizes, self.strides};
    void* first_out = onesided_out;
    DeviceBuffer intermediate;
    if (!rest.empty()) {
      KILN_ASSIGN_OR_RETURN(intermediate,
                            DeviceBuffer::allocate(static_cast<size_t>(numel_of(onesided_sizes)) * o.element_bytes(),
                                                   self.device_index, stream));
      first_out = intermediate.get();
    }
    KILN_RETURN_IF_ERROR(run_pass(*api, first, in, first_out, true, true, device, stream));
    if (!rest.empty()) {
      const View mid{first_out, complex_dtype, onesided_sizes, first.out_strides};
      KILN_RETURN_IF_ERROR(run_c2c_passes(*api, rest, mid, onesided_out, true, device, stream));
    }

    const bool is_double = complex_dtype == DType::Complex128;
    if (fill) {
      FftSymmetry symmetry;
      symmetry.fill = true;
      symmetry.last_dim = static_cast<int>(last);
      symmetry.half = half;
      for (int64_t d : dims) symmetry.mirrored |= 1u << static_cast<unsigned>(d);
      KILN_RETURN_IF_ERROR(launch_fft_finish(onesided_out, indexer_of(self.sizes, last_pass.out_strides), o.data,
                                             indexer_of(o.sizes, o.strides), is_double, scale, symmetry, stream));
    } else if (scale != 1.0) {
      const StridedIndexer ix = indexer_of(o.sizes, o.strides);
      KILN_RETURN_IF_ERROR(launch_fft_finish(o.data, ix, o.data, ix, is_double, scale, FftSymmetry{}, stream));
    }
    return return_handle(out, ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__fft_c2c(AtenTensorHandle self_h, const int64_t* dim,
                                                         int64_t dim_len_, int64_t normalization, int32_t forward,
                                                         AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda__fft_c2c", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    if (self.dtype != DType::Complex64 && self.dtype != DType::Complex128)
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(self.dtype) +
                           ", expected complex64 or complex128");
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, aoti::fft_dims_arg(self.sizes, dim, dim_len_));
    KILN_RETURN_IF_ERROR(check_rank(self));
    KILN_ASSIGN_OR_RETURN(double scale, aoti::fft_norm_scale(normalization, self.sizes, dims));
    cudaStream_t stream = current_stream(self.device_index);
    if (dims.empty()) {
      // ATen returns self.clone() (no normalisation): empty_like's strides.
      KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor_like(self, self.dtype));
      KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
      KILN_RETURN_IF_ERROR(launch_strided_copy(o.data, o.strides.data(), self.data, self.strides.data(),
                                               self.sizes.data(), self.dim(), self.element_bytes(), stream));
      return return_handle(out, ret0, "ret0");
    }
    const std::vector<Pass> passes = plan_c2c(dims, self.sizes, self.strides);
    KILN_ASSIGN_OR_RETURN(const CufftApi* api, cufft());
    KILN_ASSIGN_OR_RETURN(int device, current_device());
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor(self.sizes, passes.back().out_strides, self.dtype,
                                                      static_cast<int32_t>(DeviceType::CUDA), self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    const View in{self.data, self.dtype, self.sizes, self.strides};
    KILN_RETURN_IF_ERROR(run_c2c_passes(*api, passes, in, o.data, forward != 0, device, stream));
    if (scale != 1.0) {
      const StridedIndexer ix = indexer_of(o.sizes, o.strides);
      KILN_RETURN_IF_ERROR(launch_fft_finish(o.data, ix, o.data, ix, self.dtype == DType::Complex128, scale,
                                             FftSymmetry{}, stream));
    }
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
