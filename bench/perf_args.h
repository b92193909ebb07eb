// tutti-perf command line: nccl-tests' options plus -np (forked ranks),
// -t (ranks as threads), -C (collective), --json/--csv.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tutti/tutti.h"

struct PerfArgs {
  size_t minBytes = 32 << 20;
  size_t maxBytes = 32 << 20;
  double stepFactor = 0;   // -f; 0 means "use stepBytes"
  size_t stepBytes = 1 << 20;
  int iters = 20;
  int warmup = 5;
  int check = 1;
  int root = 0;
  int device = 0;          // -G: 1 puts the buffers in device memory, calls on a stream
  int emulateDevice = 0;   // --emulate-device N: N emulated GPUs per process (implies -G 1)
  int blocking = 1;        // -z: host calls are always blocking; accepted for compatibility
  int processes = 1;       // -np
  int threads = 1;         // -t
  std::string collective = "allreduce";
  std::vector<tuttiRedOp_t> ops{tuttiSum};
  std::vector<tuttiDataType_t> types{tuttiFloat32};
  std::string jsonPath;
  std::string csvPath;
};

// Parses argv; on error or -h prints usage and returns false with *exitCode set.
bool parsePerfArgs(int argc, char** argv, PerfArgs* args, int* exitCode);

const char* typeName(tuttiDataType_t t);
const char* opName(tuttiRedOp_t op);
size_t typeSize(tuttiDataType_t t);
