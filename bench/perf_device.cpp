#include "bench/perf_device.h"

#include <vector>

#include "tutti/tutti.h"

namespace {

std::string failed(const char* what) { return std::string(what) + ": " + tuttiGetLastError(nullptr); }

}  // namespace

std::string PerfDevice::select(int rank) {
  int n = 0;
  if (tuttiDeviceCount(&n) != tuttiSuccess) return failed("device count");
  // With none, tuttiSetDevice says why (no GPU, no driver, built without CUDA).
  if (tuttiSetDevice(n > 0 ? rank % n : 0) != tuttiSuccess) return failed("no usable device");
  return "";
}

PerfDevice::~PerfDevice() {
  tuttiMemFree(send_);
  tuttiMemFree(recv_);
  if (stream_) tuttiStreamDestroy(stream_);
}

std::string PerfDevice::allocate(size_t bytes) {
  void* s = nullptr;
  void* r = nullptr;
  if (tuttiStreamCreate(&stream_) != tuttiSuccess) return failed("stream");
  if (tuttiMemAlloc(&s, bytes) != tuttiSuccess) return failed("device buffers");
  send_ = static_cast<char*>(s);
  if (tuttiMemAlloc(&r, bytes) != tuttiSuccess) return failed("device buffers");
  recv_ = static_cast<char*>(r);
  const std::vector<char> zeros(bytes, 0);
  if (tuttiMemcpy(send_, zeros.data(), bytes) != tuttiSuccess ||
      tuttiMemcpy(recv_, zeros.data(), bytes) != tuttiSuccess)
    return failed("clearing device buffers");
  return "";
}

void PerfDevice::upload(void* device, const void* host, size_t bytes) { tuttiMemcpy(device, host, bytes); }

void PerfDevice::download(void* host, const void* device, size_t bytes) { tuttiMemcpy(host, device, bytes); }

std::string PerfDevice::synchronize() {
  return tuttiStreamSynchronize(stream_) == tuttiSuccess ? "" : failed("stream");
}
