// Entry points for device memory and streams (src/device/user_memory.h).
#include "src/api/api_guard.h"
#include "src/device/user_memory.h"

using tutti::report;

namespace {

tuttiResult_t done(const char* api, const tutti::Status& st) {
  return st.ok() ? tuttiSuccess : report(nullptr, api, st);
}

}  // namespace

extern "C" {

tuttiResult_t tuttiDeviceCount(int* count) {
  if (!count) return report(nullptr, "tuttiDeviceCount", tutti::InvalidArgument("count is NULL"));
  *count = tutti::deviceRuntime().deviceCount();
  return tuttiSuccess;
}

tuttiResult_t tuttiSetDevice(int device) {
  tutti::DeviceRuntime& rt = tutti::deviceRuntime();
  if (rt.deviceCount() > 0 && (device < 0 || device >= rt.deviceCount()))
    return report(nullptr, "tuttiSetDevice",
                  tutti::InvalidArgument("device " + std::to_string(device) + " but " +
                                         std::to_string(rt.deviceCount()) + " devices are visible"));
  return done("tuttiSetDevice", rt.setDevice(device));
}

tuttiResult_t tuttiMemAlloc(void** ptr, size_t size) {
  if (!ptr) return report(nullptr, "tuttiMemAlloc", tutti::InvalidArgument("ptr is NULL"));
  *ptr = nullptr;
  auto p = tutti::allocateUserMemory(size);
  if (!p.ok()) return report(nullptr, "tuttiMemAlloc", p.status());
  *ptr = *p;
  return tuttiSuccess;
}

tuttiResult_t tuttiMemFree(void* ptr) {
  if (!ptr) return tuttiSuccess;
  return done("tuttiMemFree", tutti::freeUserMemory(ptr));
}

tuttiResult_t tuttiMemcpy(void* dst, const void* src, size_t bytes) {
  return done("tuttiMemcpy", tutti::copyNow(dst, src, bytes));
}

tuttiResult_t tuttiStreamCreate(void** stream) {
  if (!stream) return report(nullptr, "tuttiStreamCreate", tutti::InvalidArgument("stream is NULL"));
  *stream = nullptr;
  auto s = tutti::createUserStream();
  if (!s.ok()) return report(nullptr, "tuttiStreamCreate", s.status());
  *stream = *s;
  return tuttiSuccess;
}

tuttiResult_t tuttiStreamDestroy(void* stream) {
  return done("tuttiStreamDestroy", tutti::destroyUserStream(stream));
}

tuttiResult_t tuttiStreamSynchronize(void* stream) {
  return done("tuttiStreamSynchronize", tutti::synchronizeUserStream(stream));
}

}  // extern "C"
