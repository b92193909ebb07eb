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
// device's address of the mapped queue, `scratch` workerScratchBytes() of
// zeroed device memory kept for the queue's workers, `blocks` from
// workerBlocks(). `lean`: the variant in which one thread reads the host's
// queue and hands each op to the grid (TUTTI_DEVICE_WORKER=lean, being
// measured against the default; bench/results/gpu.md).
int launchWorker(void* queue, void* scratch, unsigned blocks, bool lean, void* stream);
size_t workerScratchBytes();
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
