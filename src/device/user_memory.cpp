#include "src/device/user_memory.h"

#include <mutex>
#include <set>

namespace tutti {

namespace {

// What tutti handed out, so a stranger's pointer is refused, not freed.
struct Handed {
  std::mutex mutex;
  std::set<void*> memory;
  std::set<DeviceStream> streams;
};

Handed& handed() {
  static Handed* h = new Handed;  // outlives static destructors of callers
  return *h;
}

Status needDevice(DeviceRuntime& rt) {
  if (rt.deviceCount() > 0) return Status::Ok();
  return InvalidUsage("no device: " + rt.unavailableReason() +
                      " (TUTTI_EMULATE_DEVICE=1 emulates one on the CPU)");
}

}  // namespace

Result<void*> allocateUserMemory(size_t bytes) {
  DeviceRuntime& rt = deviceRuntime();
  TUTTI_RETURN_IF_ERROR(needDevice(rt));
  if (bytes == 0) return InvalidArgument("size is 0");
  TUTTI_ASSIGN_OR_RETURN(void* p, rt.allocDevice(bytes));
  std::lock_guard<std::mutex> lock(handed().mutex);
  handed().memory.insert(p);
  return p;
}

Status freeUserMemory(void* p) {
  {
    std::lock_guard<std::mutex> lock(handed().mutex);
    if (handed().memory.erase(p) == 0) return InvalidArgument("the pointer was not returned by tuttiMemAlloc");
  }
  deviceRuntime().freeDevice(p);
  return Status::Ok();
}

Status copyNow(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  if (!dst || !src) return InvalidArgument(std::string(dst ? "src" : "dst") + " is NULL");
  DeviceRuntime& rt = deviceRuntime();
  TUTTI_RETURN_IF_ERROR(needDevice(rt));
  TUTTI_RETURN_IF_ERROR(rt.copyAsync(dst, src, bytes, nullptr));
  return rt.synchronize(nullptr);
}

Result<DeviceStream> createUserStream() {
  DeviceRuntime& rt = deviceRuntime();
  TUTTI_RETURN_IF_ERROR(needDevice(rt));
  TUTTI_ASSIGN_OR_RETURN(DeviceStream s, rt.createStream());
  std::lock_guard<std::mutex> lock(handed().mutex);
  handed().streams.insert(s);
  return s;
}

Status destroyUserStream(DeviceStream s) {
  {
    std::lock_guard<std::mutex> lock(handed().mutex);
    if (handed().streams.erase(s) == 0) return InvalidArgument("the stream was not made by tuttiStreamCreate");
  }
  deviceRuntime().destroyStream(s);
  return Status::Ok();
}

Status synchronizeUserStream(DeviceStream s) {
  {
    std::lock_guard<std::mutex> lock(handed().mutex);
    if (s && handed().streams.count(s) == 0)
      return InvalidArgument("the stream was not made by tuttiStreamCreate (NULL is the default stream)");
  }
  DeviceRuntime& rt = deviceRuntime();
  TUTTI_RETURN_IF_ERROR(needDevice(rt));
  return rt.synchronize(s);
}

}  // namespace tutti
