#include "transport/ibverbs/device.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>

#include "src/common/config.h"
#include "src/device/device_runtime.h"
#include "transport/ibverbs/gid.h"

namespace tutti {

namespace {

// ibv_port_attr's width and speed codes, in Gbit/s per lane times lanes.
double portGbps(const ibv_port_attr& a) {
  int lanes = a.active_width == 1 ? 1 : a.active_width == 2 ? 4 : a.active_width == 4 ? 8
              : a.active_width == 8 ? 12 : a.active_width == 16 ? 2 : 1;
  double lane = a.active_speed == 1 ? 2.5 : a.active_speed == 2 ? 5 : a.active_speed == 4 ? 10
                : a.active_speed == 8 ? 10 : a.active_speed == 16 ? 14 : a.active_speed == 32 ? 25
                : a.active_speed == 64 ? 50 : a.active_speed == 128 ? 100 : 0;
  return lanes * lane;
}

Result<int> boundedTunable(const char* name, int lo, int hi) {
  TUTTI_ASSIGN_OR_RETURN(int64_t v, tunableInt(name));
  if (v < lo || v > hi)
    return InvalidArgument(std::string("TUTTI_") + name + " must be between " + std::to_string(lo) +
                           " and " + std::to_string(hi) + ", not " + std::to_string(v));
  return static_cast<int>(v);
}

}  // namespace

Result<IbSettings> IbSettings::fromEnv() {
  IbSettings s;
  s.hca = tunableString("IB_HCA");
  TUTTI_ASSIGN_OR_RETURN(s.gidIndex, boundedTunable("IB_GID_INDEX", -1, 255));
  TUTTI_ASSIGN_OR_RETURN(s.timeout, boundedTunable("IB_TIMEOUT", 1, 31));
  TUTTI_ASSIGN_OR_RETURN(s.retryCount, boundedTunable("IB_RETRY_CNT", 0, 7));
  TUTTI_ASSIGN_OR_RETURN(s.qps, boundedTunable("IB_QPS_PER_CONNECTION", 1, 8));
  return s;
}

std::vector<IbPortDesc> listIbPorts(const VerbsApi& api) {
  std::vector<IbPortDesc> out;
  int n = 0;
  ibv_device** list = api.getDeviceList(&n);
  if (!list) return out;
  for (int d = 0; d < n; ++d) {
    ibv_context* ctx = api.openDevice(list[d]);
    if (!ctx) continue;
    ibv_device_attr attr{};
    if (api.queryDevice(ctx, &attr) == 0) {
      for (int p = 1; p <= attr.phys_port_cnt; ++p) {
        ibv_port_attr pa{};
        if (api.queryPort(ctx, static_cast<uint8_t>(p), &pa) != 0) continue;
        IbPortDesc desc;
        desc.device = api.getDeviceName(list[d]);
        desc.port = p;
        desc.active = pa.state == IBV_PORT_ACTIVE;
        desc.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
        desc.gbps = portGbps(pa);
        out.push_back(desc);
      }
    }
    api.closeDevice(ctx);
  }
  api.freeDeviceList(list);
  return out;
}

bool gpuDirectRdmaAvailable() {
  struct stat st;
  return stat("/sys/kernel/mm/memory_peers/nv_mem/version", &st) == 0 ||
         stat("/sys/module/nvidia_peermem", &st) == 0;
}

std::string ibDeviceBusId(const std::string& device) {
  char target[PATH_MAX] = {0};
  std::string link = "/sys/class/infiniband/" + device + "/device";
  ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return "";
  std::string path(target, static_cast<size_t>(n));
  return path.substr(path.find_last_of('/') + 1);
}

Result<std::unique_ptr<IbDevice>> IbDevice::open(const VerbsApi& api, const IbPortDesc& port,
                                                 const IbSettings& settings) {
  std::unique_ptr<IbDevice> d(new IbDevice());
  d->api_ = &api;
  d->port_ = port;
  d->settings_ = settings;
  int n = 0;
  ibv_device** list = api.getDeviceList(&n);
  for (int i = 0; list && i < n && !d->context_; ++i)
    if (port.device == api.getDeviceName(list[i])) d->context_ = api.openDevice(list[i]);
  if (list) api.freeDeviceList(list);
  const std::string name = port.device + ":" + std::to_string(port.port);
  if (!d->context_) return SystemError("cannot open RDMA device " + port.device);
  d->pd_ = api.allocPd(d->context_);
  if (!d->pd_) return SystemError("cannot allocate a protection domain on " + name);
  ibv_port_attr pa{};
  if (api.queryPort(d->context_, static_cast<uint8_t>(port.port), &pa) != 0)
    return SystemError("cannot query " + name);
  d->lid_ = pa.lid;
  d->mtu_ = pa.active_mtu;
  if (port.ethernet) {
    TUTTI_ASSIGN_OR_RETURN(d->gidIndex_, chooseGidIndex("/sys/class/infiniband/" + port.device + "/ports/" +
                                                            std::to_string(port.port), settings.gidIndex));
  } else {
    d->gidIndex_ = settings.gidIndex >= 0 ? settings.gidIndex : 0;
  }
  if (api.queryGid(d->context_, static_cast<uint8_t>(port.port), d->gidIndex_, &d->gid_) != 0)
    return SystemError("cannot read GID " + std::to_string(d->gidIndex_) + " of " + name);
  ibv_pd* pd = d->pd_;
  const VerbsApi* a = &api;
  d->mrs_ = std::make_unique<MrCache>(
      [pd, a, name](void* start, size_t bytes) -> Result<MemoryKey> {
        ibv_mr* mr = a->regMr(pd, start, bytes,
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
        if (!mr) return ErrnoError("registering " + std::to_string(bytes) + " bytes on " + name, errno);
        return MemoryKey{mr->lkey, mr->rkey, mr};
      },
      [a](const MemoryKey& k) { a->deregMr(static_cast<ibv_mr*>(k.handle)); });
  return d;
}

IbDevice::~IbDevice() {
  mrs_.reset();  // registrations go before their protection domain
  if (pd_) api_->deallocPd(pd_);
  if (context_) api_->closeDevice(context_);
}

}  // namespace tutti

namespace tutti {

Result<RegisteredBuffer> RegisteredBuffer::allocate(IbDevice& device, size_t bytes) {
  RegisteredBuffer b;
  TUTTI_ASSIGN_OR_RETURN(b.memory_, HostBuffer::allocate(bytes));
  TUTTI_ASSIGN_OR_RETURN(b.key_, device.registrations().acquire(b.memory_.data(), bytes));
  b.cache_ = &device.registrations();
  return b;
}

Result<RegisteredBuffer> RegisteredBuffer::allocateOnDevice(IbDevice& device, DeviceRuntime& runtime,
                                                             size_t bytes) {
  // Whole GPU pages (2 MiB), so the cache's page-aligned registration stays
  // inside the allocation.
  constexpr size_t kGpuPage = 2 << 20;
  RegisteredBuffer b;
  b.deviceBytes_ = (bytes + kGpuPage - 1) / kGpuPage * kGpuPage;
  TUTTI_ASSIGN_OR_RETURN(void* p, runtime.allocDevice(b.deviceBytes_));
  b.onDevice_ = static_cast<char*>(p);
  b.runtime_ = &runtime;
  auto key = device.registrations().acquire(b.onDevice_, b.deviceBytes_);
  if (!key.ok()) return key.status().withContext("registering GPU memory for GPUDirect RDMA");
  b.key_ = *key;
  b.cache_ = &device.registrations();
  return b;
}

RegisteredBuffer& RegisteredBuffer::operator=(RegisteredBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    memory_ = std::move(o.memory_);
    onDevice_ = o.onDevice_;
    deviceBytes_ = o.deviceBytes_;
    runtime_ = o.runtime_;
    key_ = o.key_;
    cache_ = o.cache_;
    o.cache_ = nullptr;
    o.onDevice_ = nullptr;
  }
  return *this;
}

void RegisteredBuffer::reset() {
  if (cache_) {
    cache_->release(key_);
    cache_->invalidate(data(), onDevice_ ? deviceBytes_ : memory_.size());
  }
  if (onDevice_ && runtime_) runtime_->freeDevice(onDevice_);
  onDevice_ = nullptr;
  cache_ = nullptr;
  memory_ = HostBuffer();
}

}  // namespace tutti
