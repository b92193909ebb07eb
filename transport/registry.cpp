#include "transport/registry.h"

#include <strings.h>

#include "transport/p2p/transport.h"
#include "transport/shm/transport.h"
#include "transport/socket/transport.h"
#ifdef TUTTI_HAVE_UCX
#include "transport/ucx/transport.h"
#endif
#ifdef TUTTI_HAVE_IBVERBS
#include "transport/ibverbs/transport.h"
#endif

namespace tutti {

const char* netName(NetKind kind) {
  switch (kind) {
    case NetKind::kSocket: return "socket";
    case NetKind::kUcx: return "ucx";
    case NetKind::kIb: return "ib";
  }
  return "?";
}

static NetAvailability probeIb() {
  NetAvailability a;
  a.kind = NetKind::kIb;
#ifdef TUTTI_HAVE_IBVERBS
  a.built = true;
  Status st = IbTransport::probe(&a.detail);
  a.usable = a.rdma = st.ok();
  if (!st.ok()) a.detail = st.message();
#else
  a.detail = "not built (no infiniband/verbs.h when tutti was configured)";
#endif
  return a;
}

static NetAvailability probeUcx() {
  NetAvailability a;
  a.kind = NetKind::kUcx;
#ifdef TUTTI_HAVE_UCX
  a.built = true;
  Status st = UcxTransport::probe(&a.detail, &a.rdma);
  a.usable = st.ok();
  if (!st.ok()) a.detail = st.message();
#else
  a.detail = "not built (UCX's ucx.pc was not found when tutti was configured)";
#endif
  return a;
}

// In the order the default prefers them. Over TCP, UCX moved large
// messages at 0.6-0.97x the socket transport's speed (faster only for
// small ones; bench/results/ucx_vs_socket.md), so without RDMA lanes it
// runs only when named.
std::vector<NetAvailability> probeNets() {
  NetAvailability socket;
  socket.kind = NetKind::kSocket;
  socket.built = socket.usable = true;
  socket.detail = "TCP on the TUTTI_SOCKET_IFNAME interfaces";
  NetAvailability ucx = probeUcx();
  if (ucx.rdma) return {probeIb(), ucx, socket};
  return {probeIb(), socket, ucx};
}

std::vector<std::string> describeGpuDirect(int device, const TopoGraph* topology) {
#ifdef TUTTI_HAVE_IBVERBS
  return IbTransport::describeGdr({device, topology});
#else
  (void)device;
  (void)topology;
  return {"not built (no infiniband/verbs.h when tutti was configured)"};
#endif
}

Result<NetKind> chooseNet(const std::string& requested) {
  if (requested.empty()) {  // every init comes here: no UCX context unless it is chosen
    if (probeIb().usable) return NetKind::kIb;
#ifdef TUTTI_HAVE_UCX
    if (UcxTransport::hasRdmaLanes()) return NetKind::kUcx;
#endif
    return NetKind::kSocket;
  }
  for (NetKind k : {NetKind::kSocket, NetKind::kUcx, NetKind::kIb}) {
    if (strcasecmp(requested.c_str(), netName(k)) != 0) continue;
    if (k == NetKind::kSocket) return k;
    NetAvailability a = k == NetKind::kIb ? probeIb() : probeUcx();
    if (!a.usable) return InvalidUsage("TUTTI_NET=" + requested + ": the " + netName(k) +
                                       " transport cannot run here: " + a.detail);
    return k;
  }
  return InvalidArgument("TUTTI_NET=" + requested + " names no transport (socket, ucx or ib)");
}

// Every rank lists the same transports (init compared the settings that
// choose them); here each transport's own settings are compared, once for
// all ranks, so every rank can name the one that differs.
static Status checkSettingsAgree(const std::vector<std::unique_ptr<Transport>>& list,
                                 const AllgatherBlobs& swap) {
  std::string mine;
  for (const auto& t : list)
    if (!t->settings().empty()) mine += std::string(mine.empty() ? "" : "; ") + t->name() + ": " + t->settings();
  if (mine.empty() || !swap) return Status::Ok();
  TUTTI_ASSIGN_OR_RETURN(std::vector<std::string> all, swap(mine));
  for (size_t p = 0; p < all.size(); ++p)
    if (all[p] != mine)
      return InvalidUsage("rank " + std::to_string(p) + " runs with " + all[p] + " where this rank runs with " +
                          mine + "; they must match on every rank");
  return Status::Ok();
}

Result<std::vector<std::unique_ptr<Transport>>> createTransports(const TransportOptions& options) {
  std::vector<std::unique_ptr<Transport>> list;
  if (!options.p2pDisabled)
    list.push_back(std::make_unique<P2pTransport>(deviceRuntime(), options.device, options.busIds));
  if (!options.shmDisabled) list.push_back(std::make_unique<ShmTransport>());
  switch (options.net) {
    case NetKind::kSocket: {
      TUTTI_ASSIGN_OR_RETURN(auto t, SocketTransport::create(options.socketInterfaces));
      list.push_back(std::move(t));
      break;
    }
    case NetKind::kUcx: {
#ifdef TUTTI_HAVE_UCX
      TUTTI_ASSIGN_OR_RETURN(auto t, UcxTransport::create(options.swap, options.chunkBytes));
      list.push_back(std::move(t));
      break;
#else
      return InvalidUsage("TUTTI_NET=ucx: tutti was built without UCX");
#endif
    }
    case NetKind::kIb: {
#ifdef TUTTI_HAVE_IBVERBS
      TUTTI_ASSIGN_OR_RETURN(auto t, IbTransport::create(options.socketInterfaces, {options.device, options.topology}));
      list.push_back(std::move(t));
      break;
#else
      return InvalidUsage("TUTTI_NET=ib: tutti was built without verbs headers");
#endif
    }
  }
  TUTTI_RETURN_IF_ERROR(checkSettingsAgree(list, options.swap));
  return list;
}

}  // namespace tutti
