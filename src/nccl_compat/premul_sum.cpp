#include "src/nccl_compat/premul_sum.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/dtype.h"
#include "kernels/half.h"

namespace tutti::nccl {

namespace {

template <typename T>
double toDouble(T v) { return static_cast<double>(v); }
double toDouble(Half v) { return halfToFloat(v.bits); }
double toDouble(Bfloat16 v) { return bf16ToFloat(v.bits); }

// Integers wrap as tutti's integer sums do; halves round to nearest even.
template <typename T>
T fromDouble(double d) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<int64_t>(d));
  else return static_cast<T>(d);
}
template <>
Half fromDouble<Half>(double d) { return Half{floatToHalf(static_cast<float>(d))}; }
template <>
Bfloat16 fromDouble<Bfloat16>(double d) { return Bfloat16{floatToBf16(static_cast<float>(d))}; }

double readAsDouble(const void* p, int dtype) {
  switch (static_cast<DataType>(dtype)) {
#define TUTTI_READ_SCALAR(name, value, type, bytes, text) \
  case DataType::k##name: {                               \
    type v;                                               \
    std::memcpy(&v, p, sizeof v);                         \
    return toDouble(v);                                   \
  }
    TUTTI_DTYPE_LIST(TUTTI_READ_SCALAR)
#undef TUTTI_READ_SCALAR
  }
  return 0;
}

template <typename T>
void scale(const void* in, void* out, size_t n, double f) {
  const T* src = static_cast<const T*>(in);
  T* dst = static_cast<T*>(out);
  for (size_t i = 0; i < n; ++i) dst[i] = fromDouble<T>(toDouble(src[i]) * f);
}

}  // namespace

double PreMulSum::factor() const {
  return readAsDouble(residence == kScalarHostImmediate ? immediate.data() : pointer, dtype);
}

std::shared_ptr<std::vector<unsigned char>> scaledCopy(const void* input, size_t count, int dtype,
                                                       double factor) {
  auto out = std::make_shared<std::vector<unsigned char>>(count * dtypeSize(static_cast<DataType>(dtype)));
  switch (static_cast<DataType>(dtype)) {
#define TUTTI_SCALE(name, value, type, bytes, text) \
  case DataType::k##name: scale<type>(input, out->data(), count, factor); break;
    TUTTI_DTYPE_LIST(TUTTI_SCALE)
#undef TUTTI_SCALE
  }
  return out;
}

}  // namespace tutti::nccl
