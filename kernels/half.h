// float16 and bfloat16 <-> float32, rounding to nearest even. Branch-light so
// the compiler vectorises loops that use them. Internal linkage (static): the
// kernels compile these per instruction set and the copies must stay apart.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/dtype.h"

namespace tutti {

static inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static inline uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

static inline float bf16ToFloat(uint16_t h) { return bitsToFloat(static_cast<uint32_t>(h) << 16); }

static inline uint16_t floatToBf16(float f) {
  uint32_t u = floatToBits(f);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t nan = (u >> 16) | 0x40u;  // keep NaNs NaN (quiet)
  bool isNan = (u & 0x7fffffffu) > 0x7f800000u;
  return static_cast<uint16_t>(isNan ? nan : rounded);
}

static inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t expMant = h & 0x7fffu;
  // Normal and subnormal numbers: scale by 2^112 to re-bias the exponent
  // (subnormals come out right because the float multiply normalises them).
  float magic = bitsToFloat((254u - 15u) << 23);
  float f = bitsToFloat(expMant << 13) * magic;
  uint32_t bits = floatToBits(f);
  // Inf and NaN: force the float exponent to all ones.
  if (expMant >= 0x7c00u) bits |= 0x7f800000u;
  return bitsToFloat(bits | sign);
}

static inline uint16_t floatToHalf(float f) {
  uint32_t u = floatToBits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  uint16_t out;
  if (u >= 0x7f800000u) {  // Inf or NaN
    out = static_cast<uint16_t>(u > 0x7f800000u ? 0x7e00u : 0x7c00u);
  } else if (u >= 0x477ff000u) {  // rounds to >= 65520: overflow to Inf
    out = 0x7c00u;
  } else if (u < 0x38800000u) {  // below the smallest normal half: subnormal or 0
    // Adding 0.5 in float lines the half's subnormal ulp (2^-24) up with the
    // float's ulp, so the FPU does the round-to-nearest-even for us.
    float r = bitsToFloat(u) + 0.5f;
    out = static_cast<uint16_t>(floatToBits(r) - floatToBits(0.5f));
  } else {
    uint32_t mantOdd = (u >> 13) & 1u;
    u += 0xc8000fffu + mantOdd;  // re-bias exponent (-112 << 23) and round
    out = static_cast<uint16_t>(u >> 13);
  }
  return static_cast<uint16_t>(out | sign);
}

}  // namespace tutti
