// Case buffers and a stream made with tutti's own memory calls
// (tuttiMemAlloc, tuttiMemcpy, tuttiStream*): the emulated device under
// TUTTI_EMULATE_DEVICE=1, or the GPU the process sees.
#pragma once

#include <cstddef>

#include "tests/collectives/collective_cases.h"

namespace tutti_test {

class ApiCaseDevice final : public CaseDevice {
 public:
  ApiCaseDevice();
  ~ApiCaseDevice() override;
  void* buffer(int which, size_t bytes) override;
  void upload(void* device, const void* host, size_t bytes) override;
  void download(void* host, const void* device, size_t bytes) override;
  void* stream() override { return stream_; }
  std::string synchronize() override;

 private:
  void* buffers_[2] = {nullptr, nullptr};
  size_t bytes_[2] = {0, 0};
  void* stream_ = nullptr;
};

}  // namespace tutti_test
