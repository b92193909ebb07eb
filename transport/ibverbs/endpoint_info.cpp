#include "transport/ibverbs/endpoint_info.h"

#include <infiniband/verbs.h>

#include <cstring>

namespace tutti {

void encodeIbHandle(const IbHandle& h, ConnectionHandle* out) {
  *out = ConnectionHandle{};
  std::memcpy(out->bytes, &h, sizeof(h));
}

Status validateIbInfo(const IbEndpointInfo& info, const std::string& from) {
  if (info.version != kIbInfoVersion)
    return InvalidUsage(from + " speaks verbs handshake version " + std::to_string(info.version) +
                        ", this rank " + std::to_string(kIbInfoVersion) + " (mixed tutti versions?)");
  if (info.nqps < 1 || info.nqps > kMaxIbQps)
    return InvalidUsage(from + " offers " + std::to_string(info.nqps) + " queue pairs (1.." +
                        std::to_string(kMaxIbQps) + " allowed)");
  if (info.mtu < IBV_MTU_256 || info.mtu > IBV_MTU_4096)
    return InvalidUsage(from + " offers an invalid path MTU code " + std::to_string(info.mtu));
  for (int q = 0; q < info.nqps; ++q)
    if (info.qpn[q] == 0 || info.qpn[q] > 0xffffff)
      return InvalidUsage(from + " sent queue pair number " + std::to_string(info.qpn[q]));
  if (info.address == 0 || info.rkey == 0)
    return InvalidUsage(from + " sent no remote memory address or key");
  return Status::Ok();
}

Result<IbHandle> decodeIbHandle(const ConnectionHandle& in) {
  IbHandle h;
  std::memcpy(&h, in.bytes, sizeof(h));
  if (std::memcmp(h.kind, "ib", 3) != 0)
    return InvalidUsage("the peer's handle is not a verbs handle (TUTTI_NET must match on every rank)");
  TUTTI_RETURN_IF_ERROR(validateIbInfo(h.info, "the receiver"));
  if (h.info.slotBytes == 0 || h.info.nslots == 0)
    return InvalidUsage("the receiver's handle describes an empty slot ring");
  return h;
}

}  // namespace tutti
