#include "src/topo/nvml.h"

#include <dlfcn.h>

#include <cctype>
#include <cstdio>

namespace tutti {

namespace {

// The few NVML types used, as NVML's public API defines them.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
constexpr unsigned kMaxNvlinks = 18;

template <typename F>
bool resolve(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  return *fn != nullptr;
}

}  // namespace

std::string normalizeBusId(const std::string& busId) {
  // NVML pads the domain to 8 digits; sysfs and hwloc use 4.
  std::string s;
  for (char c : busId) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t colon = s.find(':');
  if (colon != std::string::npos && colon > 4) s = s.substr(colon - 4);
  return s;
}

std::vector<NvmlGpu> queryNvmlGpus(std::string* why) {
  std::vector<NvmlGpu> gpus;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    if (why) *why = "NVML not found (libnvidia-ml.so.1): no GPUs listed";
    return gpus;
  }
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*getCount)(unsigned*) = nullptr;
  nvmlReturn_t (*getHandle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*getPci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*getName)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*linkState)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*remotePci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  bool ok = resolve(lib, "nvmlInit_v2", &init) && resolve(lib, "nvmlShutdown", &shutdown) &&
            resolve(lib, "nvmlDeviceGetCount_v2", &getCount) &&
            resolve(lib, "nvmlDeviceGetHandleByIndex_v2", &getHandle) &&
            resolve(lib, "nvmlDeviceGetPciInfo_v3", &getPci) &&
            resolve(lib, "nvmlDeviceGetName", &getName);
  // NVLink queries are optional (PCIe-only GPUs, old drivers).
  resolve(lib, "nvmlDeviceGetNvLinkState", &linkState);
  resolve(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &remotePci);
  unsigned count = 0;
  if (!ok || init() != 0) {
    if (why) *why = "NVML is present but could not be initialised: no GPUs listed";
    dlclose(lib);
    return gpus;
  }
  if (getCount(&count) != 0) count = 0;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    nvmlPciInfo_t pci{};
    if (getHandle(i, &dev) != 0 || getPci(dev, &pci) != 0) continue;
    NvmlGpu g;
    char name[96] = {0};
    if (getName(dev, name, sizeof(name)) == 0) g.name = name;
    g.busId = normalizeBusId(pci.busId);
    for (unsigned l = 0; linkState && remotePci && l < kMaxNvlinks; ++l) {
      int active = 0;
      nvmlPciInfo_t remote{};
      if (linkState(dev, l, &active) != 0 || !active) continue;
      if (remotePci(dev, l, &remote) == 0) g.nvlinkPeers.push_back(normalizeBusId(remote.busId));
    }
    gpus.push_back(std::move(g));
  }
  shutdown();
  dlclose(lib);
  return gpus;
}

}  // namespace tutti
