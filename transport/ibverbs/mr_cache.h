// Registration cache: registering memory pins its pages and is slow, so a
// region is registered once, page-aligned, and found again for any buffer
// inside it. Regions are counted while in use (a connection's slot ring, a
// buffer with writes in flight) and only unused ones are dropped, oldest
// first, beyond `capacity`. Memory about to be unmapped must be invalidated
// first: a cached registration outliving its mapping would pin stale pages.
// The registrar is a function so tests need no device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>

#include "src/common/status.h"

namespace tutti {

struct MemoryKey {
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  void* handle = nullptr;  // ibv_mr*
};

class MrCache {
 public:
  using Register = std::function<Result<MemoryKey>(void* start, size_t bytes)>;
  using Deregister = std::function<void(const MemoryKey&)>;
  MrCache(Register reg, Deregister dereg, size_t capacity = 64)
      : register_(std::move(reg)), deregister_(std::move(dereg)), capacity_(capacity) {}
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // The key covering [data, data+bytes), registering it if no cached region
  // does; the region counts as in use until release().
  Result<MemoryKey> acquire(const void* data, size_t bytes);
  void release(const MemoryKey& key);
  // Drops (unused) regions overlapping memory the caller is about to unmap.
  void invalidate(const void* data, size_t bytes);
  size_t size() const { return entries_.size(); }
  uint64_t registrations() const { return registrations_; }

 private:
  struct Entry {
    uintptr_t start, end;
    MemoryKey key;
    int users = 0;
  };
  void trim();

  Register register_;
  Deregister deregister_;
  size_t capacity_;
  std::list<Entry> entries_;  // most recently used first
  uint64_t registrations_ = 0;
};

}  // namespace tutti
