// Element types and reduction ops as the kernels see them. Values equal the
// public tuttiDataType_t / tuttiRedOp_t (and NCCL's). The one list of dtypes
// is TUTTI_DTYPE_LIST: adding a type is one line there plus its conversions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tutti {

// X(enumName, value, storage type, bytes, text)
#define TUTTI_DTYPE_LIST(X)                   \
  X(Int8, 0, int8_t, 1, "int8")               \
  X(Uint8, 1, uint8_t, 1, "uint8")            \
  X(Int32, 2, int32_t, 4, "int32")            \
  X(Uint32, 3, uint32_t, 4, "uint32")         \
  X(Int64, 4, int64_t, 8, "int64")            \
  X(Uint64, 5, uint64_t, 8, "uint64")         \
  X(Float16, 6, ::tutti::Half, 2, "half")     \
  X(Float32, 7, float, 4, "float")            \
  X(Float64, 8, double, 8, "double")          \
  X(Bfloat16, 9, ::tutti::Bfloat16, 2, "bfloat16")

// X(enumName, value, text)
#define TUTTI_REDOP_LIST(X) \
  X(Sum, 0, "sum")          \
  X(Prod, 1, "prod")        \
  X(Max, 2, "max")          \
  X(Min, 3, "min")          \
  X(Avg, 4, "avg")

struct Half {
  uint16_t bits;
};
struct Bfloat16 {
  uint16_t bits;
};

enum class DataType : int {
#define TUTTI_DTYPE_ENUM(name, value, type, bytes, text) k##name = value,
  TUTTI_DTYPE_LIST(TUTTI_DTYPE_ENUM)
#undef TUTTI_DTYPE_ENUM
};
constexpr int kNumDataTypes = 10;

enum class RedOp : int {
#define TUTTI_REDOP_ENUM(name, value, text) k##name = value,
  TUTTI_REDOP_LIST(TUTTI_REDOP_ENUM)
#undef TUTTI_REDOP_ENUM
};
constexpr int kNumRedOps = 5;

inline size_t dtypeSize(DataType t) {
  switch (t) {
#define TUTTI_DTYPE_SIZE(name, value, type, bytes, text) \
  case DataType::k##name: return bytes;
    TUTTI_DTYPE_LIST(TUTTI_DTYPE_SIZE)
#undef TUTTI_DTYPE_SIZE
  }
  return 0;
}

inline const char* dtypeName(DataType t) {
  switch (t) {
#define TUTTI_DTYPE_NAME(name, value, type, bytes, text) \
  case DataType::k##name: return text;
    TUTTI_DTYPE_LIST(TUTTI_DTYPE_NAME)
#undef TUTTI_DTYPE_NAME
  }
  return "?";
}

inline const char* redOpName(RedOp op) {
  switch (op) {
#define TUTTI_REDOP_NAME(name, value, text) \
  case RedOp::k##name: return text;
    TUTTI_REDOP_LIST(TUTTI_REDOP_NAME)
#undef TUTTI_REDOP_NAME
  }
  return "?";
}

inline bool validDataType(int t) { return t >= 0 && t < kNumDataTypes; }
inline bool validRedOp(int op) { return op >= 0 && op < kNumRedOps; }

}  // namespace tutti
