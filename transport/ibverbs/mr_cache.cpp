#include "transport/ibverbs/mr_cache.h"

#include <unistd.h>

namespace tutti {

MrCache::~MrCache() {
  for (const Entry& e : entries_) deregister_(e.key);
}

Result<MemoryKey> MrCache::acquire(const void* data, size_t bytes) {
  uintptr_t start = reinterpret_cast<uintptr_t>(data);
  uintptr_t end = start + (bytes > 0 ? bytes : 1);
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->start <= start && end <= it->end) {
      ++it->users;
      entries_.splice(entries_.begin(), entries_, it);  // most recently used
      return it->key;
    }
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t alignedStart = start / page * page;
  uintptr_t alignedEnd = (end + page - 1) / page * page;
  TUTTI_ASSIGN_OR_RETURN(MemoryKey key, register_(reinterpret_cast<void*>(alignedStart),
                                                  alignedEnd - alignedStart));
  ++registrations_;
  entries_.push_front({alignedStart, alignedEnd, key, 1});
  trim();
  return key;
}

void MrCache::release(const MemoryKey& key) {
  for (Entry& e : entries_)
    if (e.key.handle == key.handle && e.users > 0) {
      --e.users;
      break;
    }
  trim();
}

void MrCache::trim() {
  for (auto it = entries_.end(); entries_.size() > capacity_ && it != entries_.begin();) {
    --it;
    if (it->users > 0) continue;
    deregister_(it->key);
    it = entries_.erase(it);
  }
}

void MrCache::invalidate(const void* data, size_t bytes) {
  uintptr_t start = reinterpret_cast<uintptr_t>(data);
  uintptr_t end = start + bytes;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->users == 0 && it->start < end && start < it->end) {
      deregister_(it->key);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace tutti
