#include "bench/perf_args.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct TypeEntry {
  const char* name;
  tuttiDataType_t type;
  size_t size;
};
const TypeEntry kTypes[] = {
    {"int8", tuttiInt8, 1},      {"uint8", tuttiUint8, 1},       {"int32", tuttiInt32, 4},
    {"uint32", tuttiUint32, 4},  {"int64", tuttiInt64, 8},       {"uint64", tuttiUint64, 8},
    {"half", tuttiFloat16, 2},   {"float", tuttiFloat32, 4},     {"double", tuttiFloat64, 8},
    {"bfloat16", tuttiBfloat16, 2},
};
const char* kOps[] = {"sum", "prod", "max", "min", "avg"};

// Sizes as nccl-tests takes them: 8, 64K, 16M, 1G.
bool parseSize(const char* s, size_t* out) {
  char* end = nullptr;
  double v = strtod(s, &end);
  if (end == s || v < 0) return false;
  switch (*end) {
    case 'K': case 'k': v *= 1024; ++end; break;
    case 'M': case 'm': v *= 1024 * 1024; ++end; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; ++end; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end) return false;
  *out = static_cast<size_t>(v);
  return true;
}

void usage(const char* prog) {
  fprintf(stderr,
          "usage: %s [options]\n"
          "  -b, --minbytes SIZE     smallest size (default 32M; K, M, G suffixes)\n"
          "  -e, --maxbytes SIZE     largest size (default 32M)\n"
          "  -f, --stepfactor F      multiply the size by F between sizes\n"
          "  -i, --stepbytes SIZE    add SIZE between sizes (default 1M, unused with -f)\n"
          "  -n, --iters N           timed iterations per size (default 20)\n"
          "  -w, --warmup_iters N    untimed iterations first (default 5)\n"
          "  -c, --check 0|1         check every result (default 1)\n"
          "  -o, --op OP             sum, prod, max, min, avg or all (default sum)\n"
          "  -d, --datatype T        int8 uint8 int32 uint32 int64 uint64 half float double\n"
          "                          bfloat16, or all (default float)\n"
          "  -r, --root R            root of broadcast and reduce (default 0)\n"
          "  -G, --device 0|1        1: buffers in GPU memory (device rank %% GPUs), calls on a\n"
          "                          stream, timed until the stream is done (default 0: host)\n"
          "      --emulate-device N  N emulated GPUs per process (memory and kernels on the CPU,\n"
          "                          TUTTI_EMULATE_DEVICE=N): tries and tests the device path\n"
          "                          on a machine without a GPU; implies -G 1\n"
          "  -z, --blocking 0|1      accepted for nccl-tests compatibility (host calls block)\n"
          "  -C, --collective NAME   allreduce allgather broadcast reduce reducescatter sendrecv\n"
          "                          alltoall barrier (default allreduce)\n"
          "  -np N                   fork N ranks on this machine (no launcher needed)\n"
          "  -t, --nthreads N        N ranks as threads in each process\n"
          "      --json FILE         also write the results as JSON\n"
          "      --csv FILE          also write the results as CSV\n"
          "Under mpirun, srun or torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR,\n"
          "MASTER_PORT or TUTTI_COMM_ID) each process is one rank.\n",
          prog);
}

}  // namespace

const char* typeName(tuttiDataType_t t) {
  for (const auto& e : kTypes)
    if (e.type == t) return e.name;
  return "?";
}
size_t typeSize(tuttiDataType_t t) {
  for (const auto& e : kTypes)
    if (e.type == t) return e.size;
  return 1;
}
const char* opName(tuttiRedOp_t op) { return op >= 0 && op < 5 ? kOps[op] : "?"; }

bool parsePerfArgs(int argc, char** argv, PerfArgs* a, int* exitCode) {
  *exitCode = 2;
  for (int i = 1; i < argc; ++i) {
    std::string opt = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) return nullptr;
      return argv[++i];
    };
    const char* v = nullptr;
    auto need = [&](const char* what) {
      v = value();
      if (!v) fprintf(stderr, "tutti-perf: %s needs a value\n", what);
      return v != nullptr;
    };
    bool ok = true;
    if (opt == "-h" || opt == "--help") {
      usage(argv[0]);
      *exitCode = 0;
      return false;
    } else if (opt == "-b" || opt == "--minbytes") {
      ok = need("-b") && parseSize(v, &a->minBytes);
    } else if (opt == "-e" || opt == "--maxbytes") {
      ok = need("-e") && parseSize(v, &a->maxBytes);
    } else if (opt == "-f" || opt == "--stepfactor") {
      ok = need("-f") && (a->stepFactor = atof(v)) > 1;
    } else if (opt == "-i" || opt == "--stepbytes") {
      ok = need("-i") && parseSize(v, &a->stepBytes) && a->stepBytes > 0;
    } else if (opt == "-n" || opt == "--iters") {
      ok = need("-n") && (a->iters = atoi(v)) > 0;
    } else if (opt == "-w" || opt == "--warmup_iters") {
      ok = need("-w") && (a->warmup = atoi(v)) >= 0;
    } else if (opt == "-c" || opt == "--check") {
      ok = need("-c");
      if (ok) a->check = atoi(v);
    } else if (opt == "-r" || opt == "--root") {
      ok = need("-r") && (a->root = atoi(v)) >= 0;
    } else if (opt == "-G" || opt == "--device") {
      ok = need("-G") && ((a->device = atoi(v)) == 0 || a->device == 1);
    } else if (opt == "--emulate-device") {
      ok = need("--emulate-device") && (a->emulateDevice = atoi(v)) > 0 && a->emulateDevice <= 16;
      a->device = 1;
    } else if (opt == "-z" || opt == "--blocking") {
      ok = need("-z");
      if (ok) a->blocking = atoi(v);
    } else if (opt == "-np") {
      ok = need("-np") && (a->processes = atoi(v)) > 0;
    } else if (opt == "-t" || opt == "--nthreads") {
      ok = need("-t") && (a->threads = atoi(v)) > 0;
    } else if (opt == "-C" || opt == "--collective") {
      ok = need("-C");
      if (ok) a->collective = v;
      const char* known[] = {"allreduce", "allgather", "broadcast", "reduce", "reducescatter",
                             "sendrecv", "alltoall", "barrier"};
      bool found = false;
      for (const char* k : known) found |= ok && a->collective == k;
      ok = found;
    } else if (opt == "-o" || opt == "--op") {
      ok = need("-o");
      if (ok) {
        a->ops.clear();
        for (int k = 0; k < 5; ++k)
          if (!strcmp(v, "all") || !strcmp(v, kOps[k])) a->ops.push_back(static_cast<tuttiRedOp_t>(k));
        ok = !a->ops.empty();
      }
    } else if (opt == "-d" || opt == "--datatype") {
      ok = need("-d");
      if (ok) {
        a->types.clear();
        for (const auto& e : kTypes)
          if (!strcmp(v, "all") || !strcmp(v, e.name)) a->types.push_back(e.type);
        if (!strcmp(v, "float32")) a->types.push_back(tuttiFloat32);
        if (!strcmp(v, "float16")) a->types.push_back(tuttiFloat16);
        ok = !a->types.empty();
      }
    } else if (opt == "--json") {
      ok = need("--json");
      if (ok) a->jsonPath = v;
    } else if (opt == "--csv") {
      ok = need("--csv");
      if (ok) a->csvPath = v;
    } else {
      ok = false;
    }
    if (!ok) {
      fprintf(stderr, "tutti-perf: bad option or value: %s %s\n", opt.c_str(), v ? v : "");
      usage(argv[0]);
      return false;
    }
  }
  if (a->maxBytes < a->minBytes) a->maxBytes = a->minBytes;
  return true;
}
