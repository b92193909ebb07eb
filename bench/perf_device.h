// tutti-perf's device buffers (-G 1): device memory and one stream per rank,
// as nccl-tests use, through tutti's own device helpers (tuttiMemAlloc and
// friends), so the same code runs on a GPU and on the emulated device
// (--emulate-device).
#pragma once

#include <cstddef>
#include <string>

class PerfDevice {
 public:
  // Makes device (rank modulo the visible devices) current for this thread;
  // "" or why not. Call before the rank's communicator is made.
  static std::string select(int rank);

  PerfDevice() = default;
  ~PerfDevice();
  PerfDevice(const PerfDevice&) = delete;
  PerfDevice& operator=(const PerfDevice&) = delete;

  // Two zeroed device buffers of `bytes` and the stream; "" or why not.
  std::string allocate(size_t bytes);
  char* send() const { return send_; }
  char* recv() const { return recv_; }
  void* stream() const { return stream_; }
  void upload(void* device, const void* host, size_t bytes);
  void download(void* host, const void* device, size_t bytes);
  // Waits for the stream; "" or what failed.
  std::string synchronize();

 private:
  char* send_ = nullptr;
  char* recv_ = nullptr;
  void* stream_ = nullptr;
};
