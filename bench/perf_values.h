// Typed element access for tutti-perf's inputs and checks, written against
// the public dtype list only.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "tutti/tutti.h"

inline uint16_t perfFloatToHalf(float f) {
  // Exact for the small integers and powers of two tutti-perf generates;
  // rounds to nearest otherwise (good enough for the tolerance it checks with).
  if (f == 0) return std::signbit(f) ? 0x8000 : 0;
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  int e;
  float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1 + 15;
  if (exp >= 31) return sign | 0x7c00;
  if (exp <= 0) return sign | static_cast<uint16_t>(std::lrint(a / std::ldexp(1.0f, -24)));
  uint32_t mant = static_cast<uint32_t>(std::lrint((m * 2 - 1) * 1024));
  if (mant == 1024) {
    mant = 0;
    ++exp;
  }
  return sign | static_cast<uint16_t>(exp << 10) | static_cast<uint16_t>(mant);
}

inline double perfHalfToDouble(uint16_t h) {
  int exp = (h >> 10) & 31, mant = h & 1023;
  double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
  if (exp == 31) v = mant ? NAN : INFINITY;
  return (h & 0x8000) ? -v : v;
}

inline void perfStore(void* buf, size_t i, tuttiDataType_t t, double v) {
  switch (t) {
    case tuttiInt8: static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(static_cast<int64_t>(v)); break;
    case tuttiUint8: static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(static_cast<int64_t>(v)); break;
    case tuttiInt32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(static_cast<int64_t>(v)); break;
    case tuttiUint32: static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(static_cast<int64_t>(v)); break;
    case tuttiInt64: static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(static_cast<int64_t>(v)); break;
    case tuttiUint64: static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(static_cast<int64_t>(v)); break;
    case tuttiFloat16: static_cast<uint16_t*>(buf)[i] = perfFloatToHalf(static_cast<float>(v)); break;
    case tuttiFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case tuttiFloat64: static_cast<double*>(buf)[i] = v; break;
    case tuttiBfloat16: {
      float f = static_cast<float>(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      static_cast<uint16_t*>(buf)[i] = static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
      break;
    }
    default: break;
  }
}

inline double perfLoad(const void* buf, size_t i, tuttiDataType_t t) {
  switch (t) {
    case tuttiInt8: return static_cast<const int8_t*>(buf)[i];
    case tuttiUint8: return static_cast<const uint8_t*>(buf)[i];
    case tuttiInt32: return static_cast<const int32_t*>(buf)[i];
    case tuttiUint32: return static_cast<const uint32_t*>(buf)[i];
    case tuttiInt64: return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case tuttiUint64: return static_cast<double>(static_cast<const uint64_t*>(buf)[i]);
    case tuttiFloat16: return perfHalfToDouble(static_cast<const uint16_t*>(buf)[i]);
    case tuttiFloat32: return static_cast<const float*>(buf)[i];
    case tuttiFloat64: return static_cast<const double*>(buf)[i];
    case tuttiBfloat16: {
      uint32_t u = static_cast<uint32_t>(static_cast<const uint16_t*>(buf)[i]) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    default: return 0;
  }
}

// Inputs: small integers (sums stay exact in every type for up to 50 ranks), or
// 1 and 2 for products (exact powers of two).
inline double perfInput(int rank, size_t i, tuttiRedOp_t op) {
  if (op == tuttiProd) return 1 + ((rank + i) % 2 == 0 && (i % 7) == 0 ? 1 : 0);
  return static_cast<double>((rank * 7 + i * 13) % 5);
}

inline bool perfIsInteger(tuttiDataType_t t) { return t <= tuttiUint64; }

// The value every rank contributes combined by op, as tutti defines it.
inline double perfReduceExpected(int nranks, size_t i, tuttiRedOp_t op, tuttiDataType_t t) {
  double acc = perfInput(0, i, op);
  for (int r = 1; r < nranks; ++r) {
    double v = perfInput(r, i, op);
    switch (op) {
      case tuttiSum: case tuttiAvg: acc += v; break;
      case tuttiProd: acc *= v; break;
      case tuttiMax: acc = v > acc ? v : acc; break;
      case tuttiMin: acc = v < acc ? v : acc; break;
      default: break;
    }
  }
  if (op == tuttiAvg) acc = perfIsInteger(t) ? std::trunc(acc / nranks) : acc / nranks;
  return acc;
}

// The value as the type holds it (integer products wrap).
inline double perfWrap(double v, tuttiDataType_t t) {
  unsigned char raw[8];
  perfStore(raw, 0, t, v);
  return perfLoad(raw, 0, t);
}

inline bool perfClose(double got, double want, tuttiDataType_t t) {
  double tol = 0;
  if (t == tuttiFloat16) tol = 1e-3;
  if (t == tuttiBfloat16) tol = 8e-3;
  if (t == tuttiFloat32) tol = 1e-6;
  if (t == tuttiFloat64) tol = 1e-12;
  return std::fabs(got - want) <= tol * std::fabs(want) + tol;
}
