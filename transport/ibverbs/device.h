// An opened RDMA port: device context, protection domain, addressing (LID,
// or GID for RoCE), path MTU, and the registration cache of the domain.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/common/host_buffer.h"
#include "src/common/status.h"
#include "transport/ibverbs/hca_filter.h"
#include "transport/ibverbs/mr_cache.h"
#include "transport/ibverbs/verbs_api.h"
#include "transport/transport.h"

namespace tutti {

// TUTTI_IB_* settings.
struct IbSettings {
  std::string hca;
  int gidIndex = -1;
  int timeout = 20;
  int retryCount = 7;
  int qps = 1;
  static Result<IbSettings> fromEnv();
};

class IbDevice {
 public:
  static Result<std::unique_ptr<IbDevice>> open(const VerbsApi& api, const IbPortDesc& port,
                                                const IbSettings& settings);
  ~IbDevice();
  const VerbsApi& api() const { return *api_; }
  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const IbPortDesc& port() const { return port_; }
  uint16_t lid() const { return lid_; }
  const ibv_gid& gid() const { return gid_; }
  int gidIndex() const { return gidIndex_; }
  ibv_mtu mtu() const { return mtu_; }
  const IbSettings& settings() const { return settings_; }
  MrCache& registrations() { return *mrs_; }

 private:
  IbDevice() = default;
  const VerbsApi* api_ = nullptr;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  IbPortDesc port_;
  uint16_t lid_ = 0;
  ibv_gid gid_{};
  int gidIndex_ = 0;
  ibv_mtu mtu_ = IBV_MTU_1024;
  IbSettings settings_;
  std::unique_ptr<MrCache> mrs_;
};

// Memory registered through a device's cache for the life of a connection:
// host memory, or GPU memory for GPUDirect RDMA; given back (and forgotten,
// as it is unmapped) on destruction.
class RegisteredBuffer {
 public:
  static Result<RegisteredBuffer> allocate(IbDevice& device, size_t bytes);
  // On the current device of `runtime`; the NIC reaches it through nvidia_peermem.
  static Result<RegisteredBuffer> allocateOnDevice(IbDevice& device, DeviceRuntime& runtime, size_t bytes);
  RegisteredBuffer() = default;
  RegisteredBuffer(RegisteredBuffer&& o) noexcept { *this = std::move(o); }
  RegisteredBuffer& operator=(RegisteredBuffer&& o) noexcept;
  ~RegisteredBuffer() { reset(); }
  char* data() const { return onDevice_ ? onDevice_ : memory_.data(); }
  const MemoryKey& key() const { return key_; }
  SlotRegion region(size_t bytes) const { return {data(), bytes, onDevice_ != nullptr}; }

 private:
  void reset();
  HostBuffer memory_;
  char* onDevice_ = nullptr;  // GPU memory instead of memory_
  size_t deviceBytes_ = 0;
  DeviceRuntime* runtime_ = nullptr;
  MemoryKey key_;
  MrCache* cache_ = nullptr;
};

// Every port of every device libibverbs lists, active or not.
std::vector<IbPortDesc> listIbPorts(const VerbsApi& api);

// Whether the NVIDIA peer-memory module lets the NIC reach GPU memory.
bool gpuDirectRdmaAvailable();

// The PCI bus id of an RDMA device ("0000:18:00.0"), from sysfs; "" if unknown.
std::string ibDeviceBusId(const std::string& device);

}  // namespace tutti
