#include "transport/ibverbs/transport.h"

#include "src/bootstrap/unique_id.h"
#include <cstring>

#include "src/common/config.h"
#include "src/common/interfaces.h"
#include "src/common/log.h"
#include "src/device/device_runtime.h"
#include "transport/ibverbs/connection.h"
#include "transport/ibverbs/endpoint_info.h"

namespace tutti {

namespace {

struct Hello {
  uint64_t magic;
  uint32_t connectionId;
  int32_t senderRank;
  IbEndpointInfo info;
};

int queueDepth(const ConnectionSpec& spec) { return spec.nslots + 8; }

Result<std::vector<IbPortDesc>> usablePorts(const VerbsApi& api, const IbSettings& settings) {
  return selectIbPorts(listIbPorts(api), settings.hca);
}

}  // namespace

Status IbTransport::probe(std::string* description) {
  if (!anyVerbsDevice()) return InvalidUsage("no RDMA device (/sys/class/infiniband is empty)");
  std::string why;
  const VerbsApi* api = verbsApi(&why);
  if (!api) return InvalidUsage(why);
  TUTTI_ASSIGN_OR_RETURN(IbSettings settings, IbSettings::fromEnv());
  TUTTI_ASSIGN_OR_RETURN(auto ports, usablePorts(*api, settings));
  description->clear();
  for (const IbPortDesc& p : ports) *description += (description->empty() ? "" : ", ") + describePort(p);
  *description += gpuDirectRdmaAvailable() ? "; GPUDirect RDMA: peer memory module loaded"
                                           : "; GPUDirect RDMA: no peer memory module";
  return Status::Ok();
}

// GPUDirect RDMA for one port, from this rank's device and topology.
static Result<GdrChoice> gdrFor(const IbPortDesc& port, const GdrContext& ctx) {
  GdrFacts f;
  TUTTI_ASSIGN_OR_RETURN(f.level, parseGdrLevel(tunableString("NET_GDR_LEVEL")));
  DeviceRuntime& rt = deviceRuntime();
  f.realDevice = ctx.device >= 0 && std::string(rt.name()) == "CUDA";
  f.peerMemory = gpuDirectRdmaAvailable();
  f.nic = port.device;
  auto gpu = ctx.device >= 0 ? rt.pciBusId(ctx.device) : Result<std::string>(InvalidArgument("host-only"));
  if (gpu.ok() && ctx.topology) f.path = pciPathBetween(*ctx.topology, *gpu, ibDeviceBusId(port.device));
  return chooseGdr(f);
}

std::vector<std::string> IbTransport::describeGdr(const GdrContext& gdr) {
  std::string why;
  const VerbsApi* api = verbsApi(&why);
  if (!api) return {"not used: " + why};
  auto settings = IbSettings::fromEnv();
  if (!settings.ok()) return {"not used: " + settings.status().message()};
  auto ports = usablePorts(*api, *settings);
  if (!ports.ok()) return {"not used: " + ports.status().message()};
  std::vector<std::string> lines;
  for (const IbPortDesc& p : *ports) {
    auto choice = gdrFor(p, gdr);
    lines.push_back(describePort(p) + ": " +
                    (!choice.ok() ? choice.status().message()
                                  : std::string(choice->use ? "used (" : "not used (") + choice->why + ")"));
  }
  return lines;
}

const char* IbTransport::slotPlace(Memory memory) const {
  if (memory == Memory::kHost) return "host";
  for (const GdrChoice& g : gdr_)
    if (!g.use) return "host-mapped";
  return "device (GDR)";
}

Result<RegisteredBuffer> IbTransport::allocateSlots(const ConnectionSpec& spec) {
  if (spec.memory == Memory::kDevice && gdr_[portFor(spec)].use)
    return RegisteredBuffer::allocateOnDevice(deviceFor(spec), deviceRuntime(), spec.slotBytes * spec.nslots);
  return RegisteredBuffer::allocate(deviceFor(spec), spec.slotBytes * spec.nslots);
}

Result<std::unique_ptr<IbTransport>> IbTransport::create(const std::vector<NetInterface>& ifaces,
                                                         const GdrContext& gdr) {
  std::string why;
  const VerbsApi* api = verbsApi(&why);
  if (!api) return InvalidUsage("verbs transport: " + why);
  if (ifaces.empty()) return InvalidArgument("verbs transport: no interface for the handshake listener");
  TUTTI_ASSIGN_OR_RETURN(IbSettings settings, IbSettings::fromEnv());
  TUTTI_ASSIGN_OR_RETURN(auto ports, usablePorts(*api, settings));
  std::unique_ptr<IbTransport> t(new IbTransport());
  for (const IbPortDesc& p : ports) {
    TUTTI_ASSIGN_OR_RETURN(auto d, IbDevice::open(*api, p, settings));
    TUTTI_ASSIGN_OR_RETURN(GdrChoice g, gdrFor(p, gdr));
    TUTTI_INFO(kSubsysNet, "verbs transport: %s, GID index %d; GPUDirect RDMA %s (%s)", describePort(p).c_str(),
               d->gidIndex(), g.use ? "used" : "not used", g.why.c_str());
    t->devices_.push_back(std::move(d));
    t->gdr_.push_back(g);
  }
  TUTTI_ASSIGN_OR_RETURN(t->listener_, Socket::listen(ifaces.front().address));
  return t;
}

Result<std::unique_ptr<RecvConnection>> IbTransport::listen(const ConnectionSpec& spec,
                                                            ConnectionHandle* handle) {
  IbDevice& dev = deviceFor(spec);
  TUTTI_ASSIGN_OR_RETURN(auto link, IbLink::create(dev, dev.settings().qps, queueDepth(spec), peerName(spec)));
  TUTTI_ASSIGN_OR_RETURN(auto ring, allocateSlots(spec));
  TUTTI_ASSIGN_OR_RETURN(auto control, RegisteredBuffer::allocate(dev, 2 * sizeof(uint64_t)));
  IbHandle h;
  h.connectionId = spec.connectionId;
  h.magic = spec.commMagic;
  h.listener = toWire(listener_.boundAddress());
  h.info = link->localInfo();
  h.info.address = reinterpret_cast<uint64_t>(ring.data());
  h.info.rkey = ring.key().rkey;
  h.info.slotBytes = static_cast<uint32_t>(spec.slotBytes);
  h.info.nslots = static_cast<uint32_t>(spec.nslots);
  encodeIbHandle(h, handle);
  auto conn = std::make_unique<IbRecvConnection>(std::move(link), std::move(ring), std::move(control),
                                                 spec.slotBytes, spec.nslots);
  TUTTI_RETURN_IF_ERROR(conn->postReceives());
  return std::unique_ptr<RecvConnection>(std::move(conn));
}

Result<std::unique_ptr<SendConnection>> IbTransport::connect(const ConnectionSpec& spec,
                                                             const ConnectionHandle& handle) {
  TUTTI_ASSIGN_OR_RETURN(IbHandle h, decodeIbHandle(handle));
  if (h.info.slotBytes != spec.slotBytes || h.info.nslots != static_cast<uint32_t>(spec.nslots))
    return InvalidUsage(peerName(spec) + " uses another slot ring (TUTTI_BUFFSIZE and TUTTI_NSTEPS must match)");
  IbDevice& dev = deviceFor(spec);
  TUTTI_ASSIGN_OR_RETURN(auto link, IbLink::create(dev, dev.settings().qps, queueDepth(spec), peerName(spec)));
  TUTTI_RETURN_IF_ERROR(link->connectTo(h.info));
  TUTTI_ASSIGN_OR_RETURN(auto slots, allocateSlots(spec));
  TUTTI_ASSIGN_OR_RETURN(auto credit, RegisteredBuffer::allocate(dev, 2 * sizeof(uint64_t)));
  Hello hello{h.magic, h.connectionId, spec.self->rank, link->localInfo()};
  hello.info.address = reinterpret_cast<uint64_t>(credit.data());
  hello.info.rkey = credit.key().rkey;
  Deadline deadline = Deadline::after(spec.timeoutSeconds);
  auto s = Socket::connect(fromWire(h.listener), deadline, spec.abort);
  if (!s.ok()) return s.status().withContext("verbs transport: handshake with " + peerName(spec));
  TUTTI_RETURN_IF_ERROR(s->sendAll(&hello, sizeof(hello), deadline, spec.abort));
  link->attachSocket(std::move(s.value()));
  return std::unique_ptr<SendConnection>(std::make_unique<IbSendConnection>(
      std::move(link), std::move(slots), std::move(credit), h.info));
}

Status IbTransport::accept(const ConnectionSpec& spec, RecvConnection& connection) {
  Deadline deadline = Deadline::after(spec.timeoutSeconds);
  // Handshakes are read side by side (Newcomers): a stranger delays nobody.
  if (!newcomers_)
    newcomers_ = std::make_unique<Newcomers>(
        sizeof(Hello), "verbs handshake listener " + listener_.boundAddress().toString());
  while (early_.find(spec.connectionId) == early_.end()) {
    if (spec.abort && spec.abort->load()) return InvalidUsage("aborted during verbs setup");
    if (deadline.expired())
      return TimeoutError("verbs transport: waiting for " + peerName(spec) + "'s handshake: timed out");
    newcomers_->wait(listener_, nullptr, deadline.remainingMs(100));
    newcomers_->acceptAll(listener_);
    for (auto& greeted : newcomers_->progress()) {
      Hello hello;
      std::memcpy(&hello, greeted.greeting.data(), sizeof(hello));
      if (hello.magic != spec.commMagic || early_.count(hello.connectionId)) {
        newcomers_->drop(greeted.socket, hello.magic != spec.commMagic ? "wrong magic" : "duplicate handshake");
        continue;
      }
      early_[hello.connectionId] = std::move(greeted.socket);
      pendingInfo_[hello.connectionId] = hello.info;
    }
  }
  auto& conn = static_cast<IbRecvConnection&>(connection);
  IbEndpointInfo sender = pendingInfo_[spec.connectionId];
  TUTTI_RETURN_IF_ERROR(validateIbInfo(sender, peerName(spec)));
  TUTTI_RETURN_IF_ERROR(conn.complete(sender));
  Socket s = std::move(early_[spec.connectionId]);
  early_.erase(spec.connectionId);
  pendingInfo_.erase(spec.connectionId);
  // Our queue pairs can receive now: the sender may start writing.
  char ready = 1;
  TUTTI_RETURN_IF_ERROR(s.sendAll(&ready, 1, deadline, spec.abort));
  conn.link().attachSocket(std::move(s));
  return Status::Ok();
}

}  // namespace tutti
