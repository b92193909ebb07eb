#include "tests/harness/api_case_device.h"

#include <string>

namespace tutti_test {

ApiCaseDevice::ApiCaseDevice() { tuttiStreamCreate(&stream_); }

ApiCaseDevice::~ApiCaseDevice() {
  for (void* b : buffers_) tuttiMemFree(b);
  tuttiStreamDestroy(stream_);
}

void* ApiCaseDevice::buffer(int which, size_t bytes) {
  if (bytes_[which] < bytes) {
    tuttiMemFree(buffers_[which]);
    buffers_[which] = nullptr;
    bytes_[which] = tuttiMemAlloc(&buffers_[which], bytes) == tuttiSuccess ? bytes : 0;
  }
  return buffers_[which];
}

void ApiCaseDevice::upload(void* device, const void* host, size_t bytes) { tuttiMemcpy(device, host, bytes); }

void ApiCaseDevice::download(void* host, const void* device, size_t bytes) { tuttiMemcpy(host, device, bytes); }

std::string ApiCaseDevice::synchronize() {
  return tuttiStreamSynchronize(stream_) == tuttiSuccess ? "" : std::string("stream: ") + tuttiGetLastError(nullptr);
}

}  // namespace tutti_test
