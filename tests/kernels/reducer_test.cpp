// Host reduction kernels: conversions, rounding, wrap-around and avg, on
// every instruction-set build this CPU can run, against scalar references
// written here (float16 via the compiler's own _Float16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/reduce_table.h"
#include "kernels/half.h"
#include "kernels/reducer.h"

namespace tutti {
const ReduceTable& reduceTable_generic();
const ReduceTable& reduceTable_avx2();
const ReduceTable& reduceTable_avx512();

namespace {

uint16_t halfBits(_Float16 h) {
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
_Float16 fromBits(uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return h;
}

TEST(HalfConversion, EveryHalfWidensExactly) {
  for (uint32_t u = 0; u < 65536; ++u) {
    float want = static_cast<float>(fromBits(static_cast<uint16_t>(u)));
    float got = halfToFloat(static_cast<uint16_t>(u));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << u;
      continue;
    }
    ASSERT_EQ(floatToBits(got), floatToBits(want)) << "half bits " << u;
  }
}

TEST(HalfConversion, NarrowingRoundsToNearestEven) {
  std::vector<float> samples = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.0f, 65520.0f, 1e9f, -1e9f,
                                5.96e-8f, 2.98e-8f, 2.99e-8f, 6.1e-5f, 1.0f + 1.0f / 2048,
                                1.0f + 3.0f / 2048, 2049.0f, 2051.0f, INFINITY, -INFINITY};
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    float f = bitsToFloat(bits(rng));
    if (!std::isnan(f)) samples.push_back(f);
  }
  // Every tie between two adjacent halves.
  for (uint32_t u = 0; u < 0x7bff; ++u) {
    float a = static_cast<float>(fromBits(u)), b = static_cast<float>(fromBits(u + 1));
    samples.push_back((a + b) / 2);
  }
  for (float f : samples)
    ASSERT_EQ(floatToHalf(f), halfBits(static_cast<_Float16>(f))) << "float " << f;
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
}

TEST(Bfloat16Conversion, RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f808001u)), 0x3f81);  // above the tie
  EXPECT_EQ(floatToBf16(bitsToFloat(0x7f7fffffu)), 0x7f80);  // rounds up to infinity
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
  for (uint32_t u = 0; u < 65536; u += 3)
    if (!std::isnan(bf16ToFloat(u))) {
      ASSERT_EQ(floatToBf16(bf16ToFloat(u)), u);
    }
}

struct Isa {
  const char* name;
  const ReduceTable* table;
};

std::vector<Isa> runnableIsas() {
  __builtin_cpu_init();
  std::vector<Isa> out = {{"generic", &reduceTable_generic()}};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma"))
    out.push_back({"avx2", &reduceTable_avx2()});
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    out.push_back({"avx512", &reduceTable_avx512()});
  return out;
}

template <typename T>
std::vector<T> randomInts(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(rng());
  return v;
}

template <typename T>
void checkIntegerType(DataType dt, const ReduceTable& table, const char* isa) {
  using U = std::make_unsigned_t<T>;
  const size_t n = 1037;  // odd: exercises vector tails
  auto a = randomInts<T>(n, 1), b = randomInts<T>(n, 2);
  std::vector<T> d(n);
  for (int op = 0; op < kNumRedOps; ++op) {
    table.reduce[static_cast<int>(dt)][op](d.data(), a.data(), b.data(), n, 3);
    for (size_t i = 0; i < n; ++i) {
      U ua = static_cast<U>(a[i]), ub = static_cast<U>(b[i]);
      T want{};
      switch (op) {
        case 0: want = static_cast<T>(static_cast<U>(ua + ub)); break;
        case 1: want = static_cast<T>(static_cast<U>(ua * ub)); break;
        case 2: want = a[i] > b[i] ? a[i] : b[i]; break;
        case 3: want = a[i] < b[i] ? a[i] : b[i]; break;
        case 4: want = static_cast<T>(static_cast<T>(static_cast<U>(ua + ub)) / 3); break;
      }
      ASSERT_EQ(d[i], want) << isa << " " << dtypeName(dt) << " op " << op << " element " << i;
    }
  }
}

TEST(HostReducer, IntegersWrapAndCompareSigned) {
  for (const Isa& isa : runnableIsas()) {
    checkIntegerType<int8_t>(DataType::kInt8, *isa.table, isa.name);
    checkIntegerType<uint8_t>(DataType::kUint8, *isa.table, isa.name);
    checkIntegerType<int32_t>(DataType::kInt32, *isa.table, isa.name);
    checkIntegerType<uint32_t>(DataType::kUint32, *isa.table, isa.name);
    checkIntegerType<int64_t>(DataType::kInt64, *isa.table, isa.name);
    checkIntegerType<uint64_t>(DataType::kUint64, *isa.table, isa.name);
  }
  int8_t a = 127, b = 1, d = 0;
  hostReducer().reduce(&d, &a, &b, 1, DataType::kInt8, RedOp::kSum, 1);
  EXPECT_EQ(d, -128);
}

// Float types: combine in float (double for float64), round once.
template <typename Store, typename Widen, typename Narrow>
void checkFloatType(DataType dt, const ReduceTable& table, const char* isa, Widen widen,
                    Narrow narrow) {
  const size_t n = 1037;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-100, 100);
  std::vector<Store> a(n), b(n), d(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = narrow(dist(rng));
    b[i] = narrow(dist(rng));
  }
  for (int op = 0; op < kNumRedOps; ++op) {
    table.reduce[static_cast<int>(dt)][op](d.data(), a.data(), b.data(), n, 7);
    for (size_t i = 0; i < n; ++i) {
      auto x = widen(a[i]), y = widen(b[i]);
      decltype(x) r{};
      switch (op) {
        case 0: r = x + y; break;
        case 1: r = x * y; break;
        case 2: r = x > y ? x : y; break;
        case 3: r = x < y ? x : y; break;
        case 4: r = (x + y) / 7; break;
      }
      Store want = narrow(r);
      ASSERT_EQ(std::memcmp(&d[i], &want, sizeof(Store)), 0)
          << isa << " " << dtypeName(dt) << " op " << op << " element " << i;
    }
  }
}

TEST(HostReducer, FloatsComputeWideAndRoundOnce) {
  for (const Isa& isa : runnableIsas()) {
    checkFloatType<float>(DataType::kFloat32, *isa.table, isa.name, [](float v) { return v; },
                          [](float v) { return v; });
    checkFloatType<double>(DataType::kFloat64, *isa.table, isa.name, [](double v) { return v; },
                           [](double v) { return v; });
    checkFloatType<uint16_t>(
        DataType::kFloat16, *isa.table, isa.name,
        [](uint16_t h) { return static_cast<float>(fromBits(h)); },
        [](float f) { return halfBits(static_cast<_Float16>(f)); });
    checkFloatType<uint16_t>(
        DataType::kBfloat16, *isa.table, isa.name,
        [](uint16_t h) { return bitsToFloat(static_cast<uint32_t>(h) << 16); },
        [](float f) {
          uint32_t u = floatToBits(f);
          return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
        });
  }
}

TEST(HostReducer, DivideAndInPlace) {
  std::vector<float> v = {3, 6, 9, 12};
  hostReducer().divide(v.data(), v.data(), v.size(), DataType::kFloat32, 3);
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3, 4}));
  std::vector<int32_t> a = {1, 2, -7}, b = {4, 5, 0};
  hostReducer().reduce(a.data(), a.data(), b.data(), 3, DataType::kInt32, RedOp::kAvg, 2);
  EXPECT_EQ(a, (std::vector<int32_t>{2, 3, -3}));  // truncation toward zero
}

}  // namespace
}  // namespace tutti
