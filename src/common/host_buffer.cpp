#include "src/common/host_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

namespace tutti {

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    this->~HostBuffer();
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

HostBuffer::~HostBuffer() {
  if (data_) munmap(data_, bytes_);
}

Result<HostBuffer> HostBuffer::allocate(size_t bytes) {
  HostBuffer b;
  if (bytes == 0) return b;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return ErrnoError("mmap of " + std::to_string(bytes) + " bytes", errno);
  if (bytes >= (2u << 20)) madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 0, bytes);
  b.data_ = p;
  b.bytes_ = bytes;
  return b;
}

}  // namespace tutti
