// GPUDirect RDMA: whether a verbs connection for device calls keeps its slots
// in device memory, registered with the NIC, instead of page-locked host
// memory mapped into the device. As NCCL, only where the NIC is near enough
// the GPU (TUTTI_NET_GDR_LEVEL, a PCI distance: PIX, PXB, PHB or SYS; LOC
// means never) and where the kernel lets the NIC reach GPU memory (the
// nvidia_peermem module). The choice is pure, so that it can be tested here.
#pragma once

#include <optional>
#include <string>

#include "src/common/status.h"
#include "src/topo/nic_affinity.h"

namespace tutti {

// TUTTI_NET_GDR_LEVEL (NCCL_NET_GDR_LEVEL): a name or NCCL's numbers 0-4.
Result<PciPath> parseGdrLevel(const std::string& value);

struct GdrFacts {
  PciPath level = PciPath::kPxb;       // the farthest path allowed
  bool realDevice = false;             // a CUDA device (not emulated, not host-only)
  bool peerMemory = false;             // the NIC can register GPU memory
  std::optional<PciPath> path;         // GPU to NIC, when the topology knows both
  std::string nic;                     // for the reason
};

struct GdrChoice {
  bool use = false;
  std::string why;  // "mlx5_0 is PIX from the GPU, within TUTTI_NET_GDR_LEVEL=PXB"
};
GdrChoice chooseGdr(const GdrFacts& facts);

}  // namespace tutti
