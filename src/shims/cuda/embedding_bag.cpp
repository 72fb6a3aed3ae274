// aoti_torch_cuda__embedding_bag, aoti_torch_cuda__embedding_bag_forward_only:
// sums, means or maxima of bags of embedding rows (nn.EmbeddingBag) with the
// four results of ATen's CUDA kernel (kernels/embedding_bag_kernel.h), which
// follow other rules than its CPU kernel's (see src/shims/cpu/embedding_bag.cpp):
//   output      [bags, D] in weight's dtype; an empty bag gives zeros;
//   offset2bag  [len(indices)], every index's bag, in every mode;
//   bag_size    [len(offsets)], each bag's count of indices other than
//               padding_idx, in every mode (sum too); with include_last_offset
//               the entry past the last bag is 0 (ATen leaves it unset);
//   max_indices [bags, D] for max, the row that gave each maximum (-1 for a
//               bag with no rows), else an empty [0].
// The index results have the promoted dtype of indices and offsets (int64
// unless both are int32), as ATen's kernel allocates them; its meta function
// says indices' dtype, which differs only for int32 indices with int64 offsets.
// Both ops are the same on CUDA. The last bag runs to the end of indices even
// with include_last_offset, as in ATen's CUDA kernel.
//
// Inputs ATen's CUDA kernel does not check (it asserts on the device or reads
// out of bounds) are refused here with a message, like the CPU op: rows out
// of range, offsets that do not start at 0, decrease or pass the end of
// indices, per_sample_weights outside mode sum, and 2-d indices (ATen reads
// only their first rows; nn.functional.embedding_bag flattens 2-d input into
// bags of equal size before calling this op, so models never pass them).
// The rows and offsets are data on the device: the kernels record the first
// bad position of each in device memory as they run (clamping, so they never
// read out of bounds), and the host reads those 16 bytes back, which waits
// for the kernels. A stream synchronisation is the price of an error message
// instead of ATen's device-side assert (which kills the CUDA context); while
// the stream captures a CUDA graph nothing can be read back, so the check is
// skipped there and bad rows are left out of their bags.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/embedding_bag_kernel.h"
#include "shims/common/embedding_bag_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

// Reads back the kernels' record of bad offsets and rows, waiting for them.
Error check_bad_positions(const EmbeddingBagArgs& a, const TensorRef& indices, cudaStream_t stream) {
  unsigned long long first_bad[2] = {0, 0};
  KILN_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(first_bad, a.first_bad, sizeof first_bad, cudaMemcpyDeviceToHost, stream));
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  constexpr auto none = std::numeric_limits<unsigned long long>::max();
  const auto read_one = [&](const void* base, DType dtype, int64_t element, int64_t& value) -> Error {
    const size_t bytes = element_size(dtype);
    int64_t v64 = 0;
    int32_t v32 = 0;
    void* dst = dtype == DType::Int32 ? static_cast<void*>(&v32) : static_cast<void*>(&v64);
    KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, static_cast<const char*>(base) + element * static_cast<int64_t>(bytes),
                                              bytes, cudaMemcpyDeviceToHost, stream));
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    value = dtype == DType::Int32 ? v32 : v64;
    return Error::Ok;
  };
  if (first_bad[0] != none) {
    const auto b = static_cast<int64_t>(first_bad[0]);
    int64_t o = 0;
    KILN_RETURN_IF_ERROR(read_one(a.offsets, a.offsets_dtype, b * a.offsets_stride, o));
    if (b == 0) return aoti::invalid("argument 'offsets': offsets[0] is " + std::to_string(o) + ", expected 0");
    return aoti::invalid("argument 'offsets': offsets[" + std::to_string(b) + "] is " + std::to_string(o) +
                         ", expected non-decreasing offsets no larger than the " + std::to_string(a.count) +
                         " indices");
  }
  if (first_bad[1] != none) {
    const auto i = static_cast<int64_t>(first_bad[1]);
    int64_t v = 0;
    KILN_RETURN_IF_ERROR(read_one(indices.data, indices.dtype, i * a.indices_stride, v));
    return aoti::invalid("argument 'indices': index " + std::to_string(v) + " at position " + std::to_string(i) +
                         " is out of range for " + std::to_string(a.rows) + " embeddings");
  }
  return Error::Ok;
}

AOTITorchError embedding_bag(const char* fn, AtenTensorHandle weight_h, AtenTensorHandle indices_h,
                             AtenTensorHandle offsets_h, int64_t mode, AtenTensorHandle* psw_h,
                             int32_t include_last_offset, int64_t padding_idx, AtenTensorHandle* ret0,
                             AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret2, "ret2"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret3, "ret3"));
    KILN_ASSIGN_OR_RETURN(TensorRef weight, read_tensor(weight_h, "weight"));
    KILN_ASSIGN_OR_RETURN(TensorRef indices, read_tensor(indices_h, "indices"));
    KILN_ASSIGN_OR_RETURN(TensorRef offsets, read_tensor(offsets_h, "offsets"));
    const DType wt = weight.dtype;
    std::optional<TensorRef> psw;
    if (psw_h != nullptr && *psw_h != nullptr) {
      KILN_ASSIGN_OR_RETURN(TensorRef p, read_tensor(*psw_h, "per_sample_weights"));
      psw = std::move(p);
    }
    std::optional<aoti::ArgShape> psw_shape;
    if (psw) psw_shape = aoti::ArgShape{psw->dtype, psw->sizes};
    KILN_ASSIGN_OR_RETURN(aoti::EmbeddingBagShape shape,
                          aoti::embedding_bag_args({wt, weight.sizes}, {indices.dtype, indices.sizes},
                                                   {offsets.dtype, offsets.sizes}, mode, psw_shape,
                                                   include_last_offset != 0));
    if (weight.device_index != indices.device_index || weight.device_index != offsets.device_index)
      return aoti::invalid("arguments 'weight', 'indices' and 'offsets' are on different CUDA devices");
    if (psw && psw->device_index != weight.device_index)
      return aoti::invalid("argument 'per_sample_weights' is on another CUDA device than 'weight'");
    const int64_t n = shape.count, n_off = shape.num_offsets, bags = shape.bags;
    const DType aux = shape.aux;
    const int device = weight.device_index;
    cudaStream_t stream = current_stream(device);

    const int64_t d = weight.sizes[1];
    const std::vector<int64_t> out_sizes{bags, d};
    KILN_ASSIGN_OR_RETURN(OwnedHandle output, new_contiguous(out_sizes, wt, device));
    KILN_ASSIGN_OR_RETURN(OwnedHandle offset2bag, new_contiguous(std::vector<int64_t>{n}, aux, device));
    KILN_ASSIGN_OR_RETURN(OwnedHandle bag_size, new_contiguous(std::vector<int64_t>{n_off}, aux, device));
    const std::vector<int64_t> max_sizes = mode == aoti::kEmbeddingBagMax ? out_sizes : std::vector<int64_t>{0};
    KILN_ASSIGN_OR_RETURN(OwnedHandle max_indices, new_contiguous(max_sizes, aux, device));
    KILN_ASSIGN_OR_RETURN(DeviceBuffer first_bad, DeviceBuffer::allocate(2 * sizeof(unsigned long long), device, stream));

    EmbeddingBagArgs a;
    a.weight = weight.data;
    a.weight_dtype = wt;
    a.rows = weight.sizes[0];
    a.features = d;
    a.weight_stride0 = weight.strides[0];
    a.weight_stride1 = weight.strides[1];
    a.indices = indices.data;
    a.indices_dtype = indices.dtype;
    a.count = n;
    a.indices_stride = indices.strides[0];
    a.offsets = offsets.data;
    a.offsets_dtype = offsets.dtype;
    a.num_offsets = n_off;
    a.offsets_stride = offsets.strides[0];
    a.bags = bags;
    if (psw) {
      a.per_sample_weights = psw->data;
      a.per_sample_weights_stride = psw->strides[0];
    }
    a.mode = static_cast<BagMode>(mode);
    // ATen passes padding_idx to its kernel as the (promoted) index type.
    a.padding_idx = aux == DType::Int32 ? static_cast<int64_t>(static_cast<int32_t>(padding_idx)) : padding_idx;
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(output.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef o2b, read_tensor(offset2bag.get(), "ret1"));
    KILN_ASSIGN_OR_RETURN(TensorRef bs, read_tensor(bag_size.get(), "ret2"));
    KILN_ASSIGN_OR_RETURN(TensorRef mi, read_tensor(max_indices.get(), "ret3"));
    a.output = o.data;
    a.offset2bag = o2b.data;
    a.bag_size = bs.data;
    a.max_indices = mi.data;
    a.aux_dtype = aux;
    a.first_bad = static_cast<unsigned long long*>(first_bad.get());
    KILN_RETURN_IF_ERROR(launch_embedding_bag(a, stream));

    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
    if (capture == cudaStreamCaptureStatusNone && n_off > 0)
      KILN_RETURN_IF_ERROR(check_bad_positions(a, indices, stream));

    KILN_RETURN_IF_ERROR(return_handle(output, ret0, "ret0"));
    KILN_RETURN_IF_ERROR(return_handle(offset2bag, ret1, "ret1"));
    KILN_RETURN_IF_ERROR(return_handle(bag_size, ret2, "ret2"));
    return return_handle(max_indices, ret3, "ret3");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__embedding_bag(
    AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets, int32_t scale_grad_by_freq,
    int64_t mode, int32_t sparse, AtenTensorHandle* per_sample_weights, int32_t include_last_offset,
    int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3) {
  return embedding_bag("aoti_torch_cuda__embedding_bag", weight, indices, offsets, mode, per_sample_weights,
                       include_last_offset, padding_idx, ret0, ret1, ret2, ret3);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__embedding_bag_forward_only(
    AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets, int32_t scale_grad_by_freq,
    int64_t mode, int32_t sparse, AtenTensorHandle* per_sample_weights, int32_t include_last_offset,
    int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3) {
  return embedding_bag("aoti_torch_cuda__embedding_bag_forward_only", weight, indices, offsets, mode,
                       per_sample_weights, include_last_offset, padding_idx, ret0, ret1, ret2, ret3);
}

}  // extern "C"
