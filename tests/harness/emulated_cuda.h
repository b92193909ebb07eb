// CUDA's runtime API over the emulated device, with CUDA's rules, so tutti's
// CUDA adapter (src/device/cuda_runtime.cpp) runs here as it would on a GPU
// (tutti::makeCudaRuntime(EmulatedCuda::api())). What it holds the caller to:
// - a last error per thread: a failed call leaves it and a kernel launch
//   returns it (the launch wrappers end in cudaGetLastError), so a
//   leftover fails the launch; "not ready" from an event query is an
//   answer and leaves none (as on an H200 with CUDA 13);
// - a copy to or from pageable memory returns once done, and while it
//   waits for its stream every other thread's cudaEventCreate and
//   cudaEventDestroy wait too (a hung rank's stacks on an H200:
//   bench/results/gpu.md), and one that waits 30 s aborts, saying why;
// - one thread runs every host function of the process, taking the ready
//   ones in a varied order; a CUDA call from a host function fails
//   (cudaErrorNotPermitted), and a host function that runs past a limit
//   while others wait aborts the process, saying so;
// - capture: work given to a capturing stream is recorded, and a graph's
//   launch runs it again, host functions included, each time; a captured
//   event cannot be queried or waited for, a capturing stream cannot be
//   synchronized; while a capture in global mode is under way, potentially
//   unsafe calls (allocations, frees, registrations, event and stream
//   waits) fail in every thread whose mode is not relaxed, and invalidate
//   that capture (cudaThreadExchangeStreamCaptureMode sets the mode);
// - the device's own rules (src/device/emulated_device.h): streams and events
//   bound to their device, peer access, a forked child, misaligned operands
//   as a sticky error that every later call returns, frees and kernel
//   loading that wait for the streams.
#pragma once

#include "src/device/cuda_api.h"
#include "tests/harness/fake_device.h"

namespace tutti_test {

class EmulatedCuda {
 public:
  // One at a time in a process: the table's functions reach it.
  explicit EmulatedCuda(FakeDevice& device);
  ~EmulatedCuda();
  EmulatedCuda(const EmulatedCuda&) = delete;
  EmulatedCuda& operator=(const EmulatedCuda&) = delete;

  static const tutti::CudaApi& api();
  // How long one host function may run while another waits for the
  // callback thread before the process aborts (default 30 s).
  void setHostFunctionLimit(double seconds);
  int hostFunctionsRun() const;

  struct State;

 private:
  State* state_;
};

}  // namespace tutti_test
