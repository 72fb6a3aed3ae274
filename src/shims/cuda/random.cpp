// The random fallbacks on CUDA: rand, randn, randint (all overloads),
// randperm, uniform, normal_functional, exponential, bernoulli_ and
// native_dropout, drawing from the calling method's RandomSource (aoti.seed)
// with the element-to-Philox-block mapping the CPU ops use, so a seed gives
// the same uniform and integer values on either device. Asynchronous on the
// thread's current stream (randperm copies from the host, which it shuffles
// on, for the same reason).
#include <cstring>
#include <string>
#include <vector>

#include "core/philox.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/random_kernel.h"
#include "shims/common/random_source.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {


// Fills `t` (a CUDA tensor) with `fill` drawn from the current source.
Error fill_tensor(const TensorRef& t, RandomFill fill) {
  KILN_ASSIGN_OR_RETURN(fill.out_index, indexer(t));
  fill.out = t.data;
  fill.dtype = t.dtype;
  fill.numel = t.numel();
  aoti::RandomSource& source = aoti::current_random_source();
  fill.seed = source.seed();
  fill.first_block = source.take(random_blocks(fill.distribution, fill.numel));
  return launch_random_fill(fill, current_stream(t.device_index));
}

Error floating_only(DType dtype, const char* op) {
  if (!is_floating_dtype(dtype))
    return aoti::invalid(std::string(op) + " needs a floating dtype, got " + dtype_name(dtype));
  return Error::Ok;
}

Result<OwnedHandle> factory(const int64_t* size, int64_t size_len, const int32_t* dtype, DType default_dtype,
                            const int32_t* device, int32_t device_index) {
  KILN_ASSIGN_OR_RETURN(auto sizes, aoti::int_array_arg(size, size_len, "size"));
  for (int64_t s : sizes)
    if (s < 0) return aoti::invalid("argument 'size' has a negative dimension: " + aoti::shape_string(sizes));
  KILN_ASSIGN_OR_RETURN(std::optional<DType> dt, optional_dtype_arg(dtype, "dtype"));
  KILN_ASSIGN_OR_RETURN(int dev, factory_device(device, device_index));
  return new_contiguous(sizes, dt ? *dt : default_dtype, dev);
}

AOTITorchError float_factory(const char* fn, const int64_t* size, int64_t size_len, AtenGeneratorHandle* gen,
                             int32_t* dtype, int32_t* device, int32_t device_index, AtenTensorHandle* ret0,
                             RandomDistribution distribution) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::refuse_generator(gen));
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, factory(size, size_len, dtype, DType::Float32, device, device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(out.get(), "ret0"));
    KILN_RETURN_IF_ERROR(floating_only(t.dtype, distribution == RandomDistribution::Normal ? "randn" : "rand"));
    RandomFill fill;
    fill.distribution = distribution;
    fill.a = 0.0;  // uniform [0, 1) or normal with mean 0 and std 1
    fill.b = 1.0;
    KILN_RETURN_IF_ERROR(fill_tensor(t, fill));
    return return_handle(out, ret0, "ret0");
  });
}

Error fill_integers(const TensorRef& t, int64_t low, int64_t high) {
  if (high <= low)
    return aoti::invalid("random_ expects 'from' < 'to', got from=" + std::to_string(low) + " to=" +
                         std::to_string(high));
  RandomFill fill;
  fill.distribution = RandomDistribution::Integer;
  fill.low = low;
  fill.high = high;
  return fill_tensor(t, fill);
}

AOTITorchError int_factory(const char* fn, int64_t low, int64_t high, const int64_t* size, int64_t size_len,
                           AtenGeneratorHandle* gen, int32_t* dtype, int32_t* device, int32_t device_index,
                           AtenTensorHandle* ret0) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::refuse_generator(gen));
    // A null dtype is None, which ATen resolves to the default dtype float32.
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, factory(size, size_len, dtype, DType::Float32, device, device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(out.get(), "ret0"));
    KILN_RETURN_IF_ERROR(fill_integers(t, low, high));
    return return_handle(out, ret0, "ret0");
  });
}

// uniform / normal_functional / exponential: a new tensor like self.
AOTITorchError like_self(const char* fn, AtenTensorHandle self, AtenGeneratorHandle* gen, AtenTensorHandle* ret0,
                         RandomFill fill, const char* op) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::refuse_generator(gen));
    KILN_ASSIGN_OR_RETURN(TensorRef s, read_tensor(self, "self"));
    KILN_RETURN_IF_ERROR(floating_only(s.dtype, op));
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor_like(s, s.dtype));
    KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(out.get(), "ret0"));
    KILN_RETURN_IF_ERROR(fill_tensor(t, fill));
    return return_handle(out, ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_rand(const int64_t* size, int64_t size_len_, int32_t* dtype,
                                                     int32_t* layout, int32_t* device, int32_t device_index_,
                                                     int32_t* pin_memory, AtenTensorHandle* ret0) {
  return float_factory("aoti_torch_cuda_rand", size, size_len_, nullptr, dtype, device, device_index_, ret0,
                       RandomDistribution::Uniform);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_rand_generator(const int64_t* size, int64_t size_len_,
                                                               AtenGeneratorHandle* generator, int32_t* dtype,
                                                               int32_t* layout, int32_t* device,
                                                               int32_t device_index_, int32_t* pin_memory,
                                                               AtenTensorHandle* ret0) {
  return float_factory("aoti_torch_cuda_rand_generator", size, size_len_, generator, dtype, device, device_index_,
                       ret0, RandomDistribution::Uniform);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randn(const int64_t* size, int64_t size_len_, int32_t* dtype,
                                                      int32_t* layout, int32_t* device, int32_t device_index_,
                                                      int32_t* pin_memory, AtenTensorHandle* ret0) {
  return float_factory("aoti_torch_cuda_randn", size, size_len_, nullptr, dtype, device, device_index_, ret0,
                       RandomDistribution::Normal);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randn_generator(const int64_t* size, int64_t size_len_,
                                                                AtenGeneratorHandle* generator, int32_t* dtype,
                                                                int32_t* layout, int32_t* device,
                                                                int32_t device_index_, int32_t* pin_memory,
                                                                AtenTensorHandle* ret0) {
  return float_factory("aoti_torch_cuda_randn_generator", size, size_len_, generator, dtype, device, device_index_,
                       ret0, RandomDistribution::Normal);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint(int64_t high, const int64_t* size, int64_t size_len_,
                                                        int32_t* dtype, int32_t* layout, int32_t* device,
                                                        int32_t device_index_, int32_t* pin_memory,
                                                        AtenTensorHandle* ret0) {
  return int_factory("aoti_torch_cuda_randint", 0, high, size, size_len_, nullptr, dtype, device, device_index_,
                     ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint_generator(int64_t high, const int64_t* size,
                                                                  int64_t size_len_, AtenGeneratorHandle* generator,
                                                                  int32_t* dtype, int32_t* layout, int32_t* device,
                                                                  int32_t device_index_, int32_t* pin_memory,
                                                                  AtenTensorHandle* ret0) {
  return int_factory("aoti_torch_cuda_randint_generator", 0, high, size, size_len_, generator, dtype, device,
                     device_index_, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint_low(int64_t low, int64_t high, const int64_t* size,
                                                            int64_t size_len_, int32_t* dtype, int32_t* layout,
                                                            int32_t* device, int32_t device_index_,
                                                            int32_t* pin_memory, AtenTensorHandle* ret0) {
  return int_factory("aoti_torch_cuda_randint_low", low, high, size, size_len_, nullptr, dtype, device,
                     device_index_, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint_low_out(AtenTensorHandle out, int64_t low, int64_t high,
                                                                const int64_t* size, int64_t size_len_) {
  return aoti::guarded("aoti_torch_cuda_randint_low_out", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out, "out"));
    KILN_ASSIGN_OR_RETURN(auto sizes, aoti::int_array_arg(size, size_len_, "size"));
    if (std::vector<int64_t>(sizes.begin(), sizes.end()) != o.sizes)
      return aoti::invalid("argument 'out' has shape " + aoti::shape_string(o.sizes) + ", expected " +
                           aoti::shape_string(sizes));
    return fill_integers(o, low, high);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randperm(int64_t n, int32_t* dtype, int32_t* layout, int32_t* device,
                                                         int32_t device_index_, int32_t* pin_memory,
                                                         AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_randperm", [&]() -> Error {
    if (n < 0) return aoti::invalid("argument 'n' must be non-negative, got " + std::to_string(n));
    const int64_t size[1] = {n};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, factory(size, 1, dtype, DType::Int64, device, device_index_));
    KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(out.get(), "ret0"));
    if (!is_integral_dtype(t.dtype) && !is_floating_dtype(t.dtype))
      return aoti::invalid(std::string("randperm does not support dtype ") + dtype_name(t.dtype));
    // Fisher-Yates on the host with the CPU op's draws: the same permutation
    // for the same seed on either device. n is a count of rows or tokens, so
    // the host pass and one copy cost little next to a sort on the GPU.
    std::vector<int64_t> perm(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
    aoti::RandomSource& source = aoti::current_random_source();
    philox_shuffle(perm.data(), n, source.seed(), source.take(static_cast<uint64_t>(n)));
    if (n > 0) {
      // Converted on the host to the output dtype, then one copy.
      const size_t elem = element_size(t.dtype);
      std::vector<unsigned char> bytes(static_cast<size_t>(n) * elem);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = perm[static_cast<size_t>(i)];
        unsigned char* p = bytes.data() + static_cast<size_t>(i) * elem;
        switch (t.dtype) {
          case DType::Int64: { const int64_t x = v; std::memcpy(p, &x, 8); break; }
          case DType::Int32: { const auto x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
          case DType::Int16: { const auto x = static_cast<int16_t>(v); std::memcpy(p, &x, 2); break; }
          case DType::Float32: { const auto x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
          case DType::Float64: { const auto x = static_cast<double>(v); std::memcpy(p, &x, 8); break; }
          default: return aoti::invalid(std::string("randperm on CUDA does not support dtype ") + dtype_name(t.dtype));
        }
      }
      cudaStream_t stream = current_stream(t.device_index);
      KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(t.data, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream));
      // The host buffer dies with this call: wait for the copy to read it.
      KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    }
    return return_handle(out, ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_uniform(AtenTensorHandle self, double from, double to,
                                                        AtenGeneratorHandle* generator, AtenTensorHandle* ret0) {
  if (!(from <= to))
    return aoti::guarded("aoti_torch_cuda_uniform", [&]() -> Error {
      return aoti::invalid("uniform expects from <= to, got " + std::to_string(from) + " > " + std::to_string(to));
    });
  RandomFill fill;
  fill.distribution = RandomDistribution::Uniform;
  fill.a = from;
  fill.b = to;
  return like_self("aoti_torch_cuda_uniform", self, generator, ret0, fill, "uniform");
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_normal_functional(AtenTensorHandle self, double mean, double std,
                                                                  AtenGeneratorHandle* generator,
                                                                  AtenTensorHandle* ret0) {
  if (!(std >= 0.0))
    return aoti::guarded("aoti_torch_cuda_normal_functional", [&]() -> Error {
      return aoti::invalid("normal expects std >= 0.0, got " + std::to_string(std));
    });
  RandomFill fill;
  fill.distribution = RandomDistribution::Normal;
  fill.a = mean;
  fill.b = std;
  return like_self("aoti_torch_cuda_normal_functional", self, generator, ret0, fill, "normal");
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_exponential(AtenTensorHandle self, double lambd,
                                                            AtenGeneratorHandle* generator, AtenTensorHandle* ret0) {
  if (!(lambd > 0.0))
    return aoti::guarded("aoti_torch_cuda_exponential", [&]() -> Error {
      return aoti::invalid("exponential expects lambd > 0.0, got " + std::to_string(lambd));
    });
  RandomFill fill;
  fill.distribution = RandomDistribution::Exponential;
  fill.a = lambd;
  return like_self("aoti_torch_cuda_exponential", self, generator, ret0, fill, "exponential");
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_bernoulli__float(AtenTensorHandle self, double p,
                                                                 AtenGeneratorHandle* generator) {
  return aoti::guarded("aoti_torch_cuda_bernoulli__float", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::refuse_generator(generator));
    if (!(p >= 0.0 && p <= 1.0)) return aoti::invalid("bernoulli expects 0 <= p <= 1, got " + std::to_string(p));
    KILN_ASSIGN_OR_RETURN(TensorRef s, read_tensor(self, "self"));
    RandomFill fill;
    fill.distribution = RandomDistribution::Bernoulli;
    fill.a = p;
    return fill_tensor(s, fill);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_bernoulli__Tensor(AtenTensorHandle self, AtenTensorHandle p,
                                                                  AtenGeneratorHandle* generator) {
  return aoti::guarded("aoti_torch_cuda_bernoulli__Tensor", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::refuse_generator(generator));
    KILN_ASSIGN_OR_RETURN(TensorRef s, read_tensor(self, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef pt, read_tensor(p, "p"));
    // p broadcasts to self: trailing dimensions aligned, size-1 ones repeated.
    if (pt.dim() > s.dim()) return aoti::invalid("argument 'p' " + aoti::shape_string(pt.sizes) +
                                                 " does not broadcast to " + aoti::shape_string(s.sizes));
    std::vector<int64_t> strides(s.sizes.size(), 0);
    const size_t lead = s.sizes.size() - pt.sizes.size();
    for (size_t i = 0; i < pt.sizes.size(); ++i) {
      if (pt.sizes[i] == s.sizes[lead + i]) strides[lead + i] = pt.strides[i];
      else if (pt.sizes[i] != 1)
        return aoti::invalid("argument 'p' " + aoti::shape_string(pt.sizes) + " does not broadcast to " +
                             aoti::shape_string(s.sizes));
    }
    RandomFill fill;
    fill.distribution = RandomDistribution::Bernoulli;
    fill.p = pt.data;
    fill.p_dtype = pt.dtype;
    KILN_ASSIGN_OR_RETURN(fill.p_index, indexer(s.sizes, strides));
    // Probabilities outside [0, 1] are not checked on the device (that would
    // need a synchronisation); a value above 1 always draws 1, below 0 never.
    return fill_tensor(s, fill);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_native_dropout(AtenTensorHandle input, double p, int32_t* train,
                                                               AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cuda_native_dropout", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(TensorRef in, read_tensor(input, "input"));
    KILN_RETURN_IF_ERROR(floating_only(in.dtype, "native_dropout"));
    if (!(p >= 0.0 && p <= 1.0))
      return aoti::invalid("dropout probability has to be between 0 and 1, got " + std::to_string(p));
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor_like(in, in.dtype));
    KILN_ASSIGN_OR_RETURN(OwnedHandle mask, new_tensor_like(in, DType::Bool));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef m, read_tensor(mask.get(), "ret1"));
    cudaStream_t stream = current_stream(in.device_index);
    KILN_ASSIGN_OR_RETURN(StridedIndexer in_index, indexer(in));
    KILN_ASSIGN_OR_RETURN(StridedIndexer out_index, indexer(o));
    const bool training = train == nullptr || *train != 0;
    const int64_t n = in.numel();
    if (training) {
      aoti::RandomSource& source = aoti::current_random_source();
      const uint64_t first = source.take(random_blocks(RandomDistribution::Uniform, n));
      KILN_RETURN_IF_ERROR(launch_dropout(in.data, in.dtype, in_index, o.data, out_index, m.data, n, p,
                                          source.seed(), first, stream));
    } else {
      // Not training: the input unchanged and an all-true mask (p = 0 keeps everything).
      KILN_RETURN_IF_ERROR(launch_dropout(in.data, in.dtype, in_index, o.data, out_index, m.data, n, 0.0, 0, 0,
                                          stream));
    }
    KILN_RETURN_IF_ERROR(return_handle(out, ret0, "ret0"));
    return return_handle(mask, ret1, "ret1");
  });
}

}  // extern "C"
