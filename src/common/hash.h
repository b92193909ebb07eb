// Small non-cryptographic hashing (host identity, derived magics).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tutti {

inline uint64_t fnv1a64(const void* data, size_t bytes, uint64_t h = 0xcbf29ce484222325ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace tutti
