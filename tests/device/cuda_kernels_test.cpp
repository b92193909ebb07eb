// The CUDA reduce, divide and copy kernels against the host kernels, bit for
// bit, for every dtype x op, at counts around the vector width and with
// operands that share or do not share their alignment. Skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_reduce.h"
#include "kernels/reducer.h"
#include "tests/device/gpu_probe.h"

namespace tutti {
namespace {

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (!tutti_test::gpuAvailable(&reason)) GTEST_SKIP() << reason;
  }
};

std::vector<unsigned char> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(gen() & 0x3f);  // small: sums and products stay finite
  return v;
}

TEST_F(CudaKernels, ReduceMatchesHostBitForBit) {
  const size_t counts[] = {1, 7, 8, 9, 31, 1031, (1 << 20) + 5};
  for (int t = 0; t < kNumDataTypes; ++t)
    for (int o = 0; o < kNumRedOps; ++o)
      for (size_t count : counts)
        for (size_t shiftB : {0, 1}) {  // b one element off: no common alignment
          const DataType dtype = static_cast<DataType>(t);
          const RedOp op = static_cast<RedOp>(o);
          const size_t es = dtypeSize(dtype), bytes = (count + 1) * es;
          auto a = randomBytes(bytes, 1 + t), b = randomBytes(bytes, 100 + o);
          std::vector<unsigned char> want(bytes), got(bytes);
          hostReducer().reduce(want.data(), a.data(), b.data() + shiftB * es, count, dtype, op, 3);
          void *da, *db, *dd;
          ASSERT_EQ(cudaMalloc(&da, bytes), cudaSuccess);
          ASSERT_EQ(cudaMalloc(&db, bytes), cudaSuccess);
          ASSERT_EQ(cudaMalloc(&dd, bytes), cudaSuccess);
          cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice);
          cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice);
          ASSERT_EQ(cuda::launchReduce(dd, da, static_cast<char*>(db) + shiftB * es, count, dtype, op, 3, nullptr), 0);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          cudaMemcpy(got.data(), dd, count * es, cudaMemcpyDeviceToHost);
          EXPECT_EQ(std::memcmp(got.data(), want.data(), count * es), 0)
              << dtypeName(dtype) << " " << redOpName(op) << " count " << count << " shift " << shiftB;
          cudaFree(da);
          cudaFree(db);
          cudaFree(dd);
        }
}

TEST_F(CudaKernels, DivideAndCopy) {
  const size_t count = 100003;
  for (int t = 0; t < kNumDataTypes; ++t) {
    const DataType dtype = static_cast<DataType>(t);
    const size_t bytes = count * dtypeSize(dtype);
    auto a = randomBytes(bytes, 7 + t);
    std::vector<unsigned char> want(bytes), got(bytes);
    hostReducer().divide(want.data(), a.data(), count, dtype, 5);
    void *da, *dd;
    ASSERT_EQ(cudaMalloc(&da, bytes + 16), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dd, bytes + 16), cudaSuccess);
    cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice);
    ASSERT_EQ(cuda::launchDivide(dd, da, count, dtype, 5, nullptr), 0);
    cudaMemcpy(got.data(), dd, bytes, cudaMemcpyDeviceToHost);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes), 0) << dtypeName(dtype);
    // Copy from an odd offset: the byte path.
    ASSERT_EQ(cuda::launchCopy(static_cast<char*>(dd) + 3, da, bytes, nullptr), 0);
    cudaMemcpy(got.data(), static_cast<char*>(dd) + 3, bytes, cudaMemcpyDeviceToHost);
    EXPECT_EQ(got, a) << dtypeName(dtype);
    cudaFree(da);
    cudaFree(dd);
  }
}

}  // namespace
}  // namespace tutti
