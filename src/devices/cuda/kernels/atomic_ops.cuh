// Device atomics for elements of any width, shared by the kernels that fold
// values into a tensor from many threads (index_put's accumulate, scatter
// reductions): a read-modify-write of 1- and 2-byte elements goes through the
// aligned 32-bit word that holds them, 4- and 8-byte ones through a CAS of
// their own width. The compare is on bits, so a NaN in memory cannot make
// the loop spin.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace kiln::cudadev {

/// The bits of `from` read as a `To` of the same size.
template <typename To, typename From>
__device__ inline To bit_cast_device(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast_device needs types of one size");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

/// *p = f(*p), atomically. T is 1, 2, 4 or 8 bytes; f maps a T to a T.
template <typename T, typename F>
__device__ inline void atomic_update(T* p, F f) {
  if constexpr (sizeof(T) == 4) {
    unsigned int* word = reinterpret_cast<unsigned int*>(p);
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const T next = f(bit_cast_device<T>(assumed));
      old = atomicCAS(word, assumed, bit_cast_device<unsigned int>(next));
    } while (old != assumed);
  } else if constexpr (sizeof(T) == 8) {
    unsigned long long* word = reinterpret_cast<unsigned long long*>(p);
    unsigned long long old = *word, assumed;
    do {
      assumed = old;
      const T next = f(bit_cast_device<T>(assumed));
      old = atomicCAS(word, assumed, bit_cast_device<unsigned long long>(next));
    } while (old != assumed);
  } else {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2, "atomic_update takes 1, 2, 4 or 8-byte elements");
    using Bits = std::conditional_t<sizeof(T) == 1, uint8_t, uint16_t>;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t{3});
    const unsigned shift = static_cast<unsigned>((addr & 3) * 8);
    const unsigned mask = (sizeof(T) == 1 ? 0xFFu : 0xFFFFu) << shift;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const T cur = bit_cast_device<T>(static_cast<Bits>((assumed & mask) >> shift));
      const unsigned next = static_cast<unsigned>(bit_cast_device<Bits>(f(cur)));
      old = atomicCAS(word, assumed, (assumed & ~mask) | ((next << shift) & mask));
    } while (old != assumed);
  }
}

/// *p += v for a 1- or 2-byte integer, wrapping as the dtype's own arithmetic does.
template <typename T>
__device__ inline void atomic_add_narrow(T* p, T v) {
  atomic_update(p, [v](T cur) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(cur) + static_cast<U>(v)));
  });
}

}  // namespace kiln::cudadev
