// What each rank tells the others at rendezvous.
#pragma once

#include <cstdint>
#include <string>

namespace tutti {

// A socket address small enough for the 128-byte unique id.
struct WireAddress {
  uint16_t family = 0;
  uint16_t port = 0;  // host order
  uint8_t addr[16] = {0};
};

struct RankInfo {
  int32_t rank = -1;
  int32_t nranks = 0;
  int32_t pid = 0;
  int32_t progressPort = 0;  // its process's progress service, on the bootstrap address
  uint64_t hostHash = 0;  // ranks with equal hashes share a node
  uint64_t coresHash = 0;  // ranks with equal hashes share their cores: one kernel, one CPU set
  WireAddress bootstrapAddress;  // where this rank's out-of-band listener is
  char hostname[64] = {0};
};

// Identity of this node: hostname, boot id and network namespace, unless
// TUTTI_HOSTID names one (tests use it to fake several nodes on one machine).
uint64_t localHostHash();
// Identity of the cores this process runs on: the kernel's boot id and the
// CPU set. Nodes that share a kernel (containers, network namespaces, nodes
// TUTTI_HOSTID fakes) share its cores; TUTTI_HOSTID does not change this.
uint64_t localCoresHash();
std::string localHostName();

}  // namespace tutti
