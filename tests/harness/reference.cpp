#include "tests/harness/reference.h"

#include <cmath>
#include <cstring>

namespace tutti_test {

namespace {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool isInteger(tuttiDataType_t t) { return t <= tuttiUint64; }
bool isSigned(tuttiDataType_t t) { return t == tuttiInt8 || t == tuttiInt32 || t == tuttiInt64; }

uint64_t widthMask(tuttiDataType_t t) {
  size_t bits = elemSize(t) * 8;
  return bits == 64 ? ~0ull : (1ull << bits) - 1;
}

int64_t signExtend(uint64_t v, tuttiDataType_t t) {
  size_t bits = elemSize(t) * 8;
  if (bits == 64) return static_cast<int64_t>(v);
  uint64_t sign = 1ull << (bits - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

uint64_t intInput(int rank, size_t index, uint64_t seed, tuttiDataType_t t) {
  return mix(seed * 1000003u + static_cast<uint64_t>(rank) * 0x100000001b3ull + index) & widthMask(t);
}

// Floats: small integers (every sum of up to 8 ranks exact in bfloat16), or
// signed powers of two for products.
double floatInput(int rank, size_t index, uint64_t seed, tuttiRedOp_t op) {
  uint64_t h = mix(seed * 7919u + static_cast<uint64_t>(rank) * 131u + index * 0x9e37u);
  if (op == tuttiProd) {
    static const double kPowers[] = {0.5, 1, 2, -1, 1, -0.5, 2, 1};
    return kPowers[h % 8];
  }
  return static_cast<double>(static_cast<int>(h % 9) - 4);
}

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t lsb = (u >> 16) & 1;
  return static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16);
}

void storeFloat(void* buf, size_t i, tuttiDataType_t t, double v) {
  switch (t) {
    case tuttiFloat16: static_cast<_Float16*>(buf)[i] = static_cast<_Float16>(static_cast<float>(v)); break;
    case tuttiBfloat16: static_cast<uint16_t*>(buf)[i] = toBf16(static_cast<float>(v)); break;
    case tuttiFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    default: static_cast<double*>(buf)[i] = v; break;
  }
}

void storeInt(void* buf, size_t i, tuttiDataType_t t, uint64_t v) {
  std::memcpy(static_cast<char*>(buf) + i * elemSize(t), &v, elemSize(t));  // little endian
}

}  // namespace

size_t elemSize(tuttiDataType_t t) {
  switch (t) {
    case tuttiInt8: case tuttiUint8: return 1;
    case tuttiFloat16: case tuttiBfloat16: return 2;
    case tuttiInt32: case tuttiUint32: case tuttiFloat32: return 4;
    default: return 8;
  }
}

const char* typeLabel(tuttiDataType_t t) {
  static const char* names[] = {"int8", "uint8", "int32", "uint32", "int64",
                                "uint64", "float16", "float32", "float64", "bfloat16"};
  return t >= 0 && t < tuttiNumTypes ? names[t] : "?";
}

const char* opLabel(tuttiRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < tuttiNumOps ? names[op] : "?";
}

void fillInput(void* buf, size_t count, tuttiDataType_t t, tuttiRedOp_t op, int rank,
               size_t firstIndex, uint64_t seed) {
  for (size_t i = 0; i < count; ++i) {
    if (isInteger(t)) storeInt(buf, i, t, intInput(rank, firstIndex + i, seed, t));
    else storeFloat(buf, i, t, floatInput(rank, firstIndex + i, seed, op));
  }
}

void fillReduced(void* out, size_t count, tuttiDataType_t t, tuttiRedOp_t op, int nranks,
                 size_t firstIndex, uint64_t seed) {
  const uint64_t mask = widthMask(t);
  for (size_t i = 0; i < count; ++i) {
    size_t index = firstIndex + i;
    if (isInteger(t)) {
      uint64_t acc = intInput(0, index, seed, t);
      for (int r = 1; r < nranks; ++r) {
        uint64_t v = intInput(r, index, seed, t);
        switch (op) {
          case tuttiSum: case tuttiAvg: acc = (acc + v) & mask; break;
          case tuttiProd: acc = (acc * v) & mask; break;
          case tuttiMax:
            acc = isSigned(t) ? (signExtend(v, t) > signExtend(acc, t) ? v : acc) : (v > acc ? v : acc);
            break;
          case tuttiMin:
            acc = isSigned(t) ? (signExtend(v, t) < signExtend(acc, t) ? v : acc) : (v < acc ? v : acc);
            break;
          default: break;
        }
      }
      if (op == tuttiAvg) {
        // The wrapped sum, read as the type, divided with truncation.
        acc = isSigned(t) ? static_cast<uint64_t>(signExtend(acc, t) / nranks) & mask : acc / nranks;
      }
      storeInt(out, i, t, acc);
    } else {
      double acc = floatInput(0, index, seed, op);
      for (int r = 1; r < nranks; ++r) {
        double v = floatInput(r, index, seed, op);
        switch (op) {
          case tuttiSum: case tuttiAvg: acc += v; break;
          case tuttiProd: acc *= v; break;
          case tuttiMax: acc = v > acc ? v : acc; break;
          case tuttiMin: acc = v < acc ? v : acc; break;
          default: break;
        }
      }
      // Avg: half, bfloat16 and float divide in float32 and round once.
      if (op == tuttiAvg)
        acc = t == tuttiFloat64 ? acc / nranks
                                : static_cast<double>(static_cast<float>(acc) / static_cast<float>(nranks));
      storeFloat(out, i, t, acc);
    }
  }
}

size_t compareElements(const void* got, const void* want, size_t count, tuttiDataType_t t,
                       std::string* report, size_t reportOffset) {
  size_t es = elemSize(t), bad = 0;
  const unsigned char* g = static_cast<const unsigned char*>(got);
  const unsigned char* w = static_cast<const unsigned char*>(want);
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(g + i * es, w + i * es, es) == 0) continue;
    if (++bad <= 3 && report) {
      uint64_t gv = 0, wv = 0;
      std::memcpy(&gv, g + i * es, es);
      std::memcpy(&wv, w + i * es, es);
      char line[160];
      snprintf(line, sizeof(line), " [element %zu: got 0x%llx want 0x%llx]", i + reportOffset,
               static_cast<unsigned long long>(gv), static_cast<unsigned long long>(wv));
      *report += line;
    }
  }
  return bad;
}

}  // namespace tutti_test
