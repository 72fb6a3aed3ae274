// The random fallbacks: rand, randn, randint (+ low, out, generator
// overloads), randperm, uniform, normal_functional, exponential, bernoulli_,
// native_dropout. Numbers come from the calling method's RandomSource
// (aoti.seed; random_source.h) through Philox: element k of a call uses block
// `first + k` (normal, 64-bit integers) or half of block `first + k / 2`, so a
// call's values depend only on the seed and the blocks earlier calls took,
// never on thread count. The distributions are ATen's; the streams are Kiln's
// own, so values differ from torch's for the same seed (as they differ between
// torch's CPU and CUDA generators).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/philox.h"
#include "devices/cpu/element_buffer.h"
#include "devices/cpu/parallel_for.h"
#include "shims/common/random_source.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

// Draws: uniform doubles in [0, 1) (two per Philox block) or full blocks.
class Draws {
 public:
  Draws(int64_t n, int per_block) : source_(aoti::current_random_source()) {
    const uint64_t blocks = per_block == 2 ? (static_cast<uint64_t>(n) + 1) / 2 : static_cast<uint64_t>(n);
    first_ = source_.take(blocks);
  }
  double uniform(int64_t k) const {
    const PhiloxBlock b = philox4x32_10(source_.seed(), first_ + static_cast<uint64_t>(k) / 2);
    return k % 2 == 0 ? uniform_double(b.v[0], b.v[1]) : uniform_double(b.v[2], b.v[3]);
  }
  PhiloxBlock block(int64_t k) const { return philox4x32_10(source_.seed(), first_ + static_cast<uint64_t>(k)); }

 private:
  aoti::RandomSource& source_;
  uint64_t first_ = 0;
};

// Fills a new or given tensor: values[k] = fn(k), written in row-major order.
template <typename T, typename Fn>
Error fill(const Tensor& out, Fn fn) {
  std::vector<T> values(static_cast<size_t>(out.numel()));
  KILN_RETURN_IF_ERROR(parallel_for(out.numel(), 4096, [&](int64_t begin, int64_t end) -> Error {
    for (int64_t k = begin; k < end; ++k) values[static_cast<size_t>(k)] = fn(k);
    return Error::Ok;
  }));
  write_elements(values.data(), out);
  return Error::Ok;
}


// The factory arguments every creation overload takes: size, dtype, device.
struct Factory {
  std::vector<int64_t> sizes;
  DType dtype;
};

Result<Factory> factory_args(const int64_t* size, int64_t size_len, const int32_t* dtype, const int32_t* device,
                             DType default_dtype) {
  KILN_ASSIGN_OR_RETURN(auto sizes, aoti::int_array_arg(size, size_len, "size"));
  for (int64_t s : sizes)
    if (s < 0) return aoti::invalid("argument 'size' has a negative dimension: " + aoti::shape_string(sizes));
  KILN_ASSIGN_OR_RETURN(std::optional<DType> dt, optional_dtype_arg(dtype, "dtype"));
  if (device != nullptr && *device != static_cast<int32_t>(DeviceType::CPU))
    return aoti::invalid("argument 'device' is not cpu (code " + std::to_string(*device) + ")");
  return Factory{{sizes.begin(), sizes.end()}, dt ? *dt : default_dtype};
}

Error floating_only(DType dtype, const char* op) {
  if (!is_floating(dtype) && !is_complex(dtype))
    return aoti::invalid(std::string(op) + " needs a floating dtype, got " + dtype_name(dtype));
  return Error::Ok;
}

Error fill_uniform(const Tensor& out, double from, double to) {
  Draws draws(out.numel(), 2);
  return fill<double>(out, [&](int64_t k) { return from + (to - from) * draws.uniform(k); });
}

Error fill_normal(const Tensor& out, double mean, double std) {
  Draws draws(out.numel(), 1);
  return fill<double>(out, [&](int64_t k) { return mean + std * philox_normal(draws.block(k)); });
}

Error fill_randint(const Tensor& out, int64_t low, int64_t high) {
  if (high <= low)
    return aoti::invalid("random_ expects 'from' < 'to', got from=" + std::to_string(low) + " to=" +
                         std::to_string(high));
  Draws draws(out.numel(), 1);
  if (is_integral(out.dtype()))
    return fill<int64_t>(out, [&](int64_t k) { return philox_uniform_int(draws.block(k), low, high); });
  return fill<double>(out, [&](int64_t k) { return static_cast<double>(philox_uniform_int(draws.block(k), low, high)); });
}

Result<Tensor> make(const Factory& f) { return new_cpu_tensor(f.sizes, f.dtype); }

AOTITorchError rand_like_factory(const char* fn, const int64_t* size, int64_t size_len, AtenGeneratorHandle* gen,
                                 int32_t* dtype, int32_t* device, AtenTensorHandle* ret0, bool normal) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::refuse_generator(gen));
    KILN_ASSIGN_OR_RETURN(Factory f, factory_args(size, size_len, dtype, device, DType::Float32));
    KILN_RETURN_IF_ERROR(floating_only(f.dtype, normal ? "randn" : "rand"));
    KILN_ASSIGN_OR_RETURN(Tensor out, make(f));
    KILN_RETURN_IF_ERROR(normal ? fill_normal(out, 0.0, 1.0) : fill_uniform(out, 0.0, 1.0));
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

AOTITorchError randint_factory(const char* fn, int64_t low, int64_t high, const int64_t* size, int64_t size_len,
                               AtenGeneratorHandle* gen, int32_t* dtype, int32_t* device, AtenTensorHandle* ret0) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::refuse_generator(gen));
    // The schema's default (int64) reaches the shim as an explicit dtype; a null
    // dtype is None, which ATen resolves to the default dtype, float32.
    KILN_ASSIGN_OR_RETURN(Factory f, factory_args(size, size_len, dtype, device, DType::Float32));
    KILN_ASSIGN_OR_RETURN(Tensor out, make(f));
    KILN_RETURN_IF_ERROR(fill_randint(out, low, high));
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_rand(const int64_t* size, int64_t size_len_, int32_t* dtype,
                                                    int32_t* layout, int32_t* device, int32_t device_index_,
                                                    int32_t* pin_memory, AtenTensorHandle* ret0) {
  return rand_like_factory("aoti_torch_cpu_rand", size, size_len_, nullptr, dtype, device, ret0, false);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_rand_generator(const int64_t* size, int64_t size_len_,
                                                              AtenGeneratorHandle* generator, int32_t* dtype,
                                                              int32_t* layout, int32_t* device,
                                                              int32_t device_index_, int32_t* pin_memory,
                                                              AtenTensorHandle* ret0) {
  return rand_like_factory("aoti_torch_cpu_rand_generator", size, size_len_, generator, dtype, device, ret0, false);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randn(const int64_t* size, int64_t size_len_, int32_t* dtype,
                                                     int32_t* layout, int32_t* device, int32_t device_index_,
                                                     int32_t* pin_memory, AtenTensorHandle* ret0) {
  return rand_like_factory("aoti_torch_cpu_randn", size, size_len_, nullptr, dtype, device, ret0, true);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randn_generator(const int64_t* size, int64_t size_len_,
                                                               AtenGeneratorHandle* generator, int32_t* dtype,
                                                               int32_t* layout, int32_t* device,
                                                               int32_t device_index_, int32_t* pin_memory,
                                                               AtenTensorHandle* ret0) {
  return rand_like_factory("aoti_torch_cpu_randn_generator", size, size_len_, generator, dtype, device, ret0, true);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randint(int64_t high, const int64_t* size, int64_t size_len_,
                                                       int32_t* dtype, int32_t* layout, int32_t* device,
                                                       int32_t device_index_, int32_t* pin_memory,
                                                       AtenTensorHandle* ret0) {
  return randint_factory("aoti_torch_cpu_randint", 0, high, size, size_len_, nullptr, dtype, device, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randint_generator(int64_t high, const int64_t* size,
                                                                 int64_t size_len_, AtenGeneratorHandle* generator,
                                                                 int32_t* dtype, int32_t* layout, int32_t* device,
                                                                 int32_t device_index_, int32_t* pin_memory,
                                                                 AtenTensorHandle* ret0) {
  return randint_factory("aoti_torch_cpu_randint_generator", 0, high, size, size_len_, generator, dtype, device,
                         ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randint_low(int64_t low, int64_t high, const int64_t* size,
                                                           int64_t size_len_, int32_t* dtype, int32_t* layout,
                                                           int32_t* device, int32_t device_index_,
                                                           int32_t* pin_memory, AtenTensorHandle* ret0) {
  return randint_factory("aoti_torch_cpu_randint_low", low, high, size, size_len_, nullptr, dtype, device, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randint_low_out(AtenTensorHandle out, int64_t low, int64_t high,
                                                               const int64_t* size, int64_t size_len_) {
  return aoti::guarded("aoti_torch_cpu_randint_low_out", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * o, cpu_tensor_arg(out, "out"));
    KILN_ASSIGN_OR_RETURN(auto sizes, aoti::int_array_arg(size, size_len_, "size"));
    KILN_RETURN_IF_ERROR(expect_shape(*o, sizes, "out"));
    return fill_randint(*o, low, high);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randperm(int64_t n, int32_t* dtype, int32_t* layout, int32_t* device,
                                                        int32_t device_index_, int32_t* pin_memory,
                                                        AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_randperm", [&]() -> Error {
    if (n < 0) return aoti::invalid("argument 'n' must be non-negative, got " + std::to_string(n));
    const int64_t size[1] = {n};
    KILN_ASSIGN_OR_RETURN(Factory f, factory_args(size, 1, dtype, device, DType::Int64));
    KILN_ASSIGN_OR_RETURN(Tensor out, make(f));
    std::vector<int64_t> perm(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
    aoti::RandomSource& source = aoti::current_random_source();
    philox_shuffle(perm.data(), n, source.seed(), source.take(static_cast<uint64_t>(n)));
    write_elements(perm.data(), out);
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_uniform(AtenTensorHandle self, double from, double to,
                                                       AtenGeneratorHandle* generator, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_uniform", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::refuse_generator(generator));
    KILN_ASSIGN_OR_RETURN(Tensor * s, cpu_tensor_arg(self, "self"));
    KILN_RETURN_IF_ERROR(floating_only(s->dtype(), "uniform"));
    if (!(from <= to)) return aoti::invalid("uniform expects from <= to, got " + std::to_string(from) + " > " + std::to_string(to));
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor_like(*s, s->dtype()));
    KILN_RETURN_IF_ERROR(fill_uniform(out, from, to));
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_normal_functional(AtenTensorHandle self, double mean, double std,
                                                                 AtenGeneratorHandle* generator,
                                                                 AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_normal_functional", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::refuse_generator(generator));
    KILN_ASSIGN_OR_RETURN(Tensor * s, cpu_tensor_arg(self, "self"));
    KILN_RETURN_IF_ERROR(floating_only(s->dtype(), "normal"));
    if (!(std >= 0.0)) return aoti::invalid("normal expects std >= 0.0, got " + std::to_string(std));
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor_like(*s, s->dtype()));
    KILN_RETURN_IF_ERROR(fill_normal(out, mean, std));
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_exponential(AtenTensorHandle self, double lambd,
                                                           AtenGeneratorHandle* generator, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_exponential", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::refuse_generator(generator));
    KILN_ASSIGN_OR_RETURN(Tensor * s, cpu_tensor_arg(self, "self"));
    KILN_RETURN_IF_ERROR(floating_only(s->dtype(), "exponential"));
    if (!(lambd > 0.0)) return aoti::invalid("exponential expects lambd > 0.0, got " + std::to_string(lambd));
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor_like(*s, s->dtype()));
    Draws draws(out.numel(), 2);
    KILN_RETURN_IF_ERROR(fill<double>(out, [&](int64_t k) { return -std::log1p(-draws.uniform(k)) / lambd; }));
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_bernoulli__float(AtenTensorHandle self, double p,
                                                                AtenGeneratorHandle* generator) {
  return aoti::guarded("aoti_torch_cpu_bernoulli__float", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::refuse_generator(generator));
    KILN_ASSIGN_OR_RETURN(Tensor * s, cpu_tensor_arg(self, "self"));
    if (!(p >= 0.0 && p <= 1.0)) return aoti::invalid("bernoulli expects 0 <= p <= 1, got " + std::to_string(p));
    Draws draws(s->numel(), 2);
    return fill<double>(*s, [&](int64_t k) { return draws.uniform(k) < p ? 1.0 : 0.0; });
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_bernoulli__Tensor(AtenTensorHandle self, AtenTensorHandle p,
                                                                 AtenGeneratorHandle* generator) {
  return aoti::guarded("aoti_torch_cpu_bernoulli__Tensor", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::refuse_generator(generator));
    KILN_ASSIGN_OR_RETURN(Tensor * s, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * pt, cpu_tensor_arg(p, "p"));
    KILN_ASSIGN_OR_RETURN(Tensor probs, broadcast_view(*pt, s->sizes(), "p"));
    const std::vector<double> pv = read_elements<double>(probs);
    for (double v : pv)
      if (!(v >= 0.0 && v <= 1.0)) return aoti::invalid("bernoulli expects 0 <= p <= 1, got " + std::to_string(v));
    Draws draws(s->numel(), 2);
    return fill<double>(*s, [&](int64_t k) { return draws.uniform(k) < pv[static_cast<size_t>(k)] ? 1.0 : 0.0; });
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_native_dropout(AtenTensorHandle input, double p, int32_t* train,
                                                              AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cpu_native_dropout", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(Tensor * in, cpu_tensor_arg(input, "input"));
    KILN_RETURN_IF_ERROR(floating_only(in->dtype(), "native_dropout"));
    if (!(p >= 0.0 && p <= 1.0)) return aoti::invalid("dropout probability has to be between 0 and 1, got " + std::to_string(p));
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor_like(*in, in->dtype()));
    KILN_ASSIGN_OR_RETURN(Tensor mask, new_cpu_tensor_like(*in, DType::Bool));
    const bool training = train == nullptr || *train != 0;
    const std::vector<double> x = read_elements<double>(*in);
    std::vector<int64_t> keep(x.size(), 1);
    std::vector<double> y = x;
    if (training) {
      // Kept with probability 1 - p and scaled by 1 / (1 - p); p == 1 drops everything.
      const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
      Draws draws(in->numel(), 2);
      for (size_t k = 0; k < x.size(); ++k) {
        keep[k] = draws.uniform(static_cast<int64_t>(k)) >= p ? 1 : 0;
        y[k] = keep[k] ? x[k] * scale : 0.0;
      }
    }
    write_elements(y.data(), out);
    write_elements(keep.data(), mask);
    KILN_RETURN_IF_ERROR(return_tensor(std::move(out), ret0, "ret0"));
    return return_tensor(std::move(mask), ret1, "ret1");
  });
}

}  // extern "C"
