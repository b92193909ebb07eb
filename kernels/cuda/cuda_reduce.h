// The CUDA reduce, divide and copy kernels, callable from plain C++: no CUDA
// header is needed to use them. Each launches on `stream` (a cudaStream_t)
// and returns the launch's cudaError_t as an int (0: launched).
// Same contract as Reducer (kernels/reducer.h): dst may alias a or b; avg
// divides by `divisor` at the step that produces the final value.
#pragma once

#include <cstddef>

#include "kernels/dtype.h"

namespace tutti {
namespace cuda {

int launchReduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, RedOp op,
                 int divisor, void* stream);
int launchDivide(void* dst, const void* src, size_t count, DataType dtype, int divisor,
                 void* stream);
// A vectorised copy kernel (16-byte loads when the pointers allow).
int launchCopy(void* dst, const void* src, size_t bytes, void* stream);
// The op queue's worker (kernels/op_queue.h) on `stream`: `queue` is the
// device's address of the mapped queue, `arrivals` a zeroed counter in
// device memory kept for the device's workers, `blocks` from workerBlocks().
int launchWorker(void* queue, void* arrivals, unsigned blocks, void* stream);
// For measurement only (cuda-kernels-bench): opWorker's variant with one
// reader of the host's queue; `scratch` is workerLeanScratchBytes() of
// zeroed device memory kept for it.
size_t workerLeanScratchBytes();
int launchWorkerLean(void* queue, void* scratch, unsigned blocks, void* stream);
// The grid of a worker on the current device when `sharers` ranks' workers
// (threads or processes of this node on this device) may run at once.
int workerBlocks(int sharers);
// Loads every kernel above on the current device now. CUDA loads a kernel
// at its first launch (lazy loading, the default since CUDA 12), and the
// load waits for the device's streams to go idle: a first launch while a
// stream gate holds a caller's stream never returns.
int loadKernels();

}  // namespace cuda
}  // namespace tutti
