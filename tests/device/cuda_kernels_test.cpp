// The CUDA reduce, divide and copy kernels against the host kernels, bit for
// bit, for every dtype x op, at counts around the vector width and with
// operands that share or do not share their alignment. Skipped without a GPU.
// Each test's CUDA work runs in a child (gpu_probe.h): the collective tests
// in the same process fork ranks afterwards.
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

// Device copies of host bytes, freed at scope end.
struct DeviceBytes {
  void* p = nullptr;
  explicit DeviceBytes(size_t bytes) { cudaMalloc(&p, bytes); }
  DeviceBytes(const std::vector<unsigned char>& host) : DeviceBytes(host.size()) {
    cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice);
  }
  ~DeviceBytes() { cudaFree(p); }
  char* at(size_t offset) const { return static_cast<char*>(p) + offset; }
};

std::string launched(int launch, const char* what) {
  if (launch != 0) return std::string(what) + " launch: " + cudaGetErrorString(static_cast<cudaError_t>(launch));
  cudaError_t e = cudaDeviceSynchronize();
  return e == cudaSuccess ? "" : std::string(what) + ": " + cudaGetErrorString(e);
}

TEST_F(CudaKernels, ReduceMatchesHostBitForBit) {
  EXPECT_EQ(tutti_test::inChild([]() -> std::string {
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
            DeviceBytes da(a), db(b), dd(bytes);
            const std::string label = std::string(dtypeName(dtype)) + " " + redOpName(op) + " count " +
                                      std::to_string(count) + " shift " + std::to_string(shiftB);
            std::string err = launched(cuda::launchReduce(dd.p, da.p, db.at(shiftB * es), count, dtype, op, 3, nullptr),
                                       label.c_str());
            if (!err.empty()) return err;
            cudaMemcpy(got.data(), dd.p, count * es, cudaMemcpyDeviceToHost);
            if (std::memcmp(got.data(), want.data(), count * es) != 0) return label + ": wrong result";
          }
    return "";
  }), "");
}

TEST_F(CudaKernels, DivideAndCopy) {
  EXPECT_EQ(tutti_test::inChild([]() -> std::string {
    const size_t count = 100003;
    for (int t = 0; t < kNumDataTypes; ++t) {
      const DataType dtype = static_cast<DataType>(t);
      const size_t bytes = count * dtypeSize(dtype);
      auto a = randomBytes(bytes, 7 + t);
      a.resize(bytes + 16);
      std::vector<unsigned char> want(bytes), got(bytes);
      hostReducer().divide(want.data(), a.data(), count, dtype, 5);
      DeviceBytes da(a), dd(bytes + 16);
      std::string err = launched(cuda::launchDivide(dd.p, da.p, count, dtype, 5, nullptr), dtypeName(dtype));
      if (!err.empty()) return err;
      cudaMemcpy(got.data(), dd.p, bytes, cudaMemcpyDeviceToHost);
      if (std::memcmp(got.data(), want.data(), bytes) != 0) return std::string(dtypeName(dtype)) + ": wrong quotient";
      // Copy to an odd offset: the byte path.
      err = launched(cuda::launchCopy(dd.at(3), da.p, bytes, nullptr), "copy");
      if (!err.empty()) return err;
      cudaMemcpy(got.data(), dd.at(3), bytes, cudaMemcpyDeviceToHost);
      if (std::memcmp(got.data(), a.data(), bytes) != 0) return std::string(dtypeName(dtype)) + ": wrong copy";
    }
    return "";
  }), "");
}

}  // namespace
}  // namespace tutti
