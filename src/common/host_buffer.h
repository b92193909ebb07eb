// Communicator-lifetime host memory: mapped once, backed by transparent huge
// pages when large, and touched at allocation so no collective pays the page
// faults (about 10 us per 4 KiB page on these machines).
#pragma once

#include <cstddef>

#include "src/common/status.h"

namespace tutti {

class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(HostBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) {
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer();

  static Result<HostBuffer> allocate(size_t bytes);
  char* data() const { return static_cast<char*>(data_); }
  size_t size() const { return bytes_; }
  // Forgets the memory without unmapping it (something may still write there).
  void* release() {
    void* d = data_;
    data_ = nullptr;
    bytes_ = 0;
    return d;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace tutti
