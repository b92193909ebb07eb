// tuttiMemAlloc, tuttiMemcpy and tuttiStream*: through the public API only,
// on the emulated device (TUTTI_EMULATE_DEVICE), as tutti-perf
// --emulate-device uses them: buffers they make are device memory to the
// collectives, and what tutti did not hand out is refused, not freed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

bool lastErrorSays(const char* text) { return std::string(tuttiGetLastError(nullptr)).find(text) != std::string::npos; }

std::string allReduceOnAllocatedMemory(const RankContext& ctx) {
  int devices = 0;
  if (tuttiDeviceCount(&devices) != tuttiSuccess || devices != 2) return "device count " + std::to_string(devices);
  if (tuttiSetDevice(ctx.rank % 2) != tuttiSuccess) return std::string("set device: ") + tuttiGetLastError(nullptr);
  tuttiComm_t comm = nullptr;
  std::string err = initComm(ctx, &comm);
  if (!err.empty()) return err;
  int device = -1;
  if (tuttiCommCuDevice(comm, &device) != tuttiSuccess || device != ctx.rank % 2)
    return "the communicator serves device " + std::to_string(device);
  const size_t count = 100003;
  std::vector<int64_t> host(count), back(count, -1);
  for (size_t i = 0; i < count; ++i) host[i] = static_cast<int64_t>(i) * (ctx.rank + 1);
  void* buf = nullptr;
  void* stream = nullptr;
  if (tuttiMemAlloc(&buf, count * 8) != tuttiSuccess || tuttiStreamCreate(&stream) != tuttiSuccess)
    return std::string("alloc: ") + tuttiGetLastError(nullptr);
  if (tuttiMemcpy(buf, host.data(), count * 8) != tuttiSuccess) return "upload";
  if (tuttiAllReduce(buf, buf, count, tuttiInt64, tuttiSum, comm, stream) != tuttiSuccess)
    return std::string("allreduce: ") + tuttiGetLastError(comm);
  if (tuttiStreamSynchronize(stream) != tuttiSuccess) return "synchronize";
  if (tuttiMemcpy(back.data(), buf, count * 8) != tuttiSuccess) return "download";
  const int64_t factor = ctx.nranks * (ctx.nranks + 1) / 2;
  for (size_t i = 0; i < count; ++i)
    if (back[i] != static_cast<int64_t>(i) * factor)
      return "element " + std::to_string(i) + " is " + std::to_string(back[i]);
  tuttiCommDestroy(comm);
  // Refusals: a stranger's pointer or stream, twice freed, bad device.
  int local = 0;
  if (tuttiMemFree(&local) != tuttiInvalidArgument || !lastErrorSays("not returned by tuttiMemAlloc"))
    return std::string("stranger pointer: ") + tuttiGetLastError(nullptr);
  if (tuttiMemFree(buf) != tuttiSuccess) return "free";
  if (tuttiMemFree(buf) != tuttiInvalidArgument) return "a second free was accepted";
  if (tuttiStreamDestroy(&local) != tuttiInvalidArgument || !lastErrorSays("not made by tuttiStreamCreate"))
    return std::string("stranger stream: ") + tuttiGetLastError(nullptr);
  if (tuttiStreamDestroy(stream) != tuttiSuccess) return "stream destroy";
  if (tuttiSetDevice(2) != tuttiInvalidArgument || !lastErrorSays("device 2 but 2 devices"))
    return std::string("device 2: ") + tuttiGetLastError(nullptr);
  if (tuttiMemAlloc(nullptr, 8) != tuttiInvalidArgument || tuttiMemcpy(nullptr, &local, 4) != tuttiInvalidArgument)
    return "NULL arguments accepted";
  return "";
}

TEST(DeviceMemory, AllocatedBuffersAreDeviceMemoryToCollectives) {
  RankEnv env = [](int) { return std::map<std::string, std::string>{{"TUTTI_EMULATE_DEVICE", "2"}}; };
  EXPECT_EQ(summarize(runRanks(3, allReduceOnAllocatedMemory, env)), "");
}

TEST(DeviceMemory, WithoutADeviceSaysHowToEmulateOne) {
  auto body = [](const RankContext&) -> std::string {
    int devices = 0;
    tuttiDeviceCount(&devices);
    if (devices > 0) return "";  // a machine with a GPU: nothing to refuse
    void* p = reinterpret_cast<void*>(1);
    if (tuttiMemAlloc(&p, 64) != tuttiInvalidUsage || p != nullptr) return "allocated without a device";
    if (!lastErrorSays("TUTTI_EMULATE_DEVICE")) return std::string("message: ") + tuttiGetLastError(nullptr);
    void* s = nullptr;
    if (tuttiStreamCreate(&s) != tuttiInvalidUsage) return "a stream without a device";
    return "";
  };
  EXPECT_EQ(summarize(runRanks(1, body)), "");
}

}  // namespace
}  // namespace tutti_test
