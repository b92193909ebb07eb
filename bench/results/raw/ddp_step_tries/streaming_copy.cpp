// Copies of 128 KiB chunks from a slot into a large buffer: memcpy against
// streaming (non-temporal) stores (ddp_step_tries.md, stop 71).
//   g++ -O2 -mavx2 streaming_copy.cpp && ./a.out CHUNK_KIB TOTAL_MIB
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <vector>
static void ntcopy(void* d, const void* s, size_t n) {
  char* dst = (char*)d; const char* src = (const char*)s; size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    __m256i a = _mm256_loadu_si256((const __m256i*)(src + i)), b = _mm256_loadu_si256((const __m256i*)(src + i + 32));
    __m256i c = _mm256_loadu_si256((const __m256i*)(src + i + 64)), e = _mm256_loadu_si256((const __m256i*)(src + i + 96));
    _mm256_stream_si256((__m256i*)(dst + i), a); _mm256_stream_si256((__m256i*)(dst + i + 32), b);
    _mm256_stream_si256((__m256i*)(dst + i + 64), c); _mm256_stream_si256((__m256i*)(dst + i + 96), e);
  }
  _mm_sfence();
  memcpy(dst + i, src + i, n - i);
}
int main(int argc, char** argv) {
  size_t chunk = atoi(argv[1]) << 10, total = (size_t)atoi(argv[2]) << 20;
  std::vector<char> slot(chunk * 8, 1);
  char* out = (char*)aligned_alloc(4096, total); memset(out, 0, total);
  for (int mode = 0; mode < 2; ++mode) for (int rep = 0; rep < 3; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < 5; ++it)
      for (size_t off = 0; off < total; off += chunk) {
        const char* s = slot.data() + ((off / chunk) % 8) * chunk;
        if (mode == 0) memcpy(out + off, s, chunk); else ntcopy(out + off, s, chunk);
      }
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("chunk %zuK total %zuM %s: %.1f GB/s\n", chunk >> 10, total >> 20, mode ? "stream" : "memcpy", 5.0 * total / sec / 1e9);
  }
}
