// Host reduction loops for every dtype x op, written once and compiled per
// instruction set (reduce_generic.cpp, reduce_avx2.cpp, reduce_avx512.cpp).
// The loops are plain so the compiler vectorises them; float16 and bfloat16
// are widened to float32, combined, and rounded to nearest even once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "kernels/cpu/reduce_table.h"
#include "kernels/dtype.h"
#include "kernels/half.h"

namespace tutti {

#ifndef TUTTI_CPU_ISA
#error "define TUTTI_CPU_ISA (the instruction set this file is compiled for) first"
#endif

// Each instruction set gets its own namespace: the same templates compiled with
// different flags must not be merged by the linker.
namespace TUTTI_CPU_ISA {

// How a storage type is computed: Acc is the arithmetic type; integers use
// their unsigned twin so sums and products wrap instead of overflowing.
template <typename T, typename Enable = void>
struct Arith {
  using Acc = T;
  static Acc load(T v) { return v; }
  static T store(Acc v) { return v; }
};
template <typename T>
struct Arith<T, std::enable_if_t<std::is_integral_v<T>>> {
  using Acc = std::make_unsigned_t<T>;
  static Acc load(T v) { return static_cast<Acc>(v); }
  static T store(Acc v) { return static_cast<T>(v); }
};
template <>
struct Arith<Half> {
  using Acc = float;
  static float load(Half v) { return halfToFloat(v.bits); }
  static Half store(float v) { return Half{floatToHalf(v)}; }
};
template <>
struct Arith<Bfloat16> {
  using Acc = float;
  static float load(Bfloat16 v) { return bf16ToFloat(v.bits); }
  static Bfloat16 store(float v) { return Bfloat16{floatToBf16(v)}; }
};

struct OpSum {
  template <typename T, typename A>
  static A apply(A x, A y) { return x + y; }
};
struct OpProd {
  template <typename T, typename A>
  static A apply(A x, A y) { return x * y; }
};
// Max and min compare in the signed type for signed integers.
struct OpMax {
  template <typename T, typename A>
  static A apply(A x, A y) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(x) > static_cast<T>(y) ? x : y;
    else return x > y ? x : y;
  }
};
struct OpMin {
  template <typename T, typename A>
  static A apply(A x, A y) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(x) < static_cast<T>(y) ? x : y;
    else return x < y ? x : y;
  }
};

#if defined(__F16C__)
// float16 with the F16C instructions: 8 elements widened at once, combined in
// float32 by f, narrowed with round-to-nearest-even. The tail goes scalar.
template <typename F>
size_t halfVectorLoop(uint16_t* d, const uint16_t* pa, const uint16_t* pb, size_t n, F f) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pa + i)));
    __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + i)));
    alignas(32) float fx[8], fy[8], fr[8];
    _mm256_store_ps(fx, x);
    _mm256_store_ps(fy, y);
    for (int k = 0; k < 8; ++k) fr[k] = f(fx[k], fy[k]);
    __m128i h = _mm256_cvtps_ph(_mm256_load_ps(fr), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), h);
  }
  return i;
}
#endif

// Runs f over elements [start, n) one at a time: the portable path, and the
// tail of the vector paths.
template <typename T, typename F>
void scalarLoop(T* __restrict__ d, const T* pa, const T* pb, size_t start, size_t n, F f) {
  using A = Arith<T>;
  for (size_t i = start; i < n; ++i) d[i] = A::store(f(A::load(pa[i]), A::load(pb[i])));
}

template <typename T, typename F>
void elementwise(void* dst, const void* a, const void* b, size_t n, F f) {
  size_t start = 0;
#if defined(__F16C__)
  if constexpr (std::is_same_v<T, Half>)
    start = halfVectorLoop(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                           static_cast<const uint16_t*>(b), n, f);
#endif
  scalarLoop(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), start, n, f);
}

template <typename T, typename Op>
void reduceLoop(void* dst, const void* a, const void* b, size_t n, int) {
  using Acc = typename Arith<T>::Acc;
  elementwise<T>(dst, a, b, n, [](Acc x, Acc y) { return Op::template apply<T>(x, y); });
}

// The quotient of a sum: integers divide the (wrapped) sum in their own signed
// or unsigned type, truncating; floats divide in their accumulation type.
template <typename T>
inline typename Arith<T>::Acc divideAcc(typename Arith<T>::Acc sum, int divisor) {
  using Acc = typename Arith<T>::Acc;
  if constexpr (std::is_integral_v<T>) {
    return static_cast<Acc>(static_cast<T>(static_cast<T>(sum) / static_cast<T>(divisor)));
  } else {
    return sum / static_cast<Acc>(divisor);
  }
}

template <typename T>
void avgLoop(void* dst, const void* a, const void* b, size_t n, int divisor) {
  using Acc = typename Arith<T>::Acc;
  elementwise<T>(dst, a, b, n, [divisor](Acc x, Acc y) { return divideAcc<T>(x + y, divisor); });
}

template <typename T>
void divideLoop(void* dst, const void* src, size_t n, int divisor) {
  using A = Arith<T>;
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = A::store(divideAcc<T>(A::load(s[i]), divisor));
}

inline ReduceTable makeReduceTable() {
  ReduceTable t{};
#define TUTTI_FILL_ROW(name, value, type, bytes, text)             \
  t.reduce[value][0] = &reduceLoop<type, OpSum>;                   \
  t.reduce[value][1] = &reduceLoop<type, OpProd>;                  \
  t.reduce[value][2] = &reduceLoop<type, OpMax>;                   \
  t.reduce[value][3] = &reduceLoop<type, OpMin>;                   \
  t.reduce[value][4] = &avgLoop<type>;                             \
  t.divide[value] = &divideLoop<type>;
  TUTTI_DTYPE_LIST(TUTTI_FILL_ROW)
#undef TUTTI_FILL_ROW
  return t;
}

}  // namespace TUTTI_CPU_ISA
}  // namespace tutti
