// Both ends of a verbs connection: RC queue pairs (TUTTI_IB_QPS_PER_CONNECTION)
// on one completion queue. The sender RDMA-writes each chunk, striped over the
// queue pairs, straight into the receiver's registered slot ring, with the
// chunk's size as immediate data; the receiver learns of it from a receive
// completion per queue pair and returns credits by RDMA-writing its consumed
// count into the sender's credit word. The TCP socket of the handshake stays
// open: its closing tells either end that the other process is gone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/common/socket.h"
#include "transport/ibverbs/device.h"
#include "transport/ibverbs/endpoint_info.h"
#include "transport/ibverbs/flow_control.h"
#include "transport/transport.h"

namespace tutti {

// Queue pairs, their completion queue and the handshake socket.
class IbLink {
 public:
  static Result<std::unique_ptr<IbLink>> create(IbDevice& device, int nqps, int depth,
                                                std::string peerName);
  ~IbLink();
  // This end's half of the handshake (address/rkey filled by the caller).
  IbEndpointInfo localInfo() const;
  // Moves every queue pair to ready-to-send against the peer's.
  Status connectTo(const IbEndpointInfo& remote);
  int nqps() const { return static_cast<int>(qps_.size()); }
  int depth() const { return depth_; }  // work requests each queue may hold
  ibv_qp* qp(int q) const { return qps_[q]; }
  ibv_cq* cq() const { return cq_; }
  IbDevice& device() { return device_; }
  const std::string& peerName() const { return peerName_; }
  void attachSocket(Socket s) { socket_ = std::move(s); }
  Socket& socket() { return socket_; }
  // The peer's process is gone when its end of the handshake socket closes.
  Status checkSocket();
  Status completionError(const ibv_wc& wc, const char* what) const;

 private:
  IbLink(IbDevice& device, std::string peerName, int depth)
      : device_(device), peerName_(std::move(peerName)), depth_(depth) {}
  IbDevice& device_;
  std::string peerName_;
  int depth_;
  ibv_cq* cq_ = nullptr;
  std::vector<ibv_qp*> qps_;
  uint32_t psn_ = 0;
  Socket socket_;
};

class IbSendConnection final : public SendConnection {
 public:
  IbSendConnection(std::unique_ptr<IbLink> link, RegisteredBuffer slots, RegisteredBuffer credit,
                   const IbEndpointInfo& receiver);
  void* acquire(size_t* capacity, uint32_t ahead) override;
  Status post(size_t bytes) override;
  Status progress() override;
  bool flushed() const override { return completedWrs_ == postedWrs_; }
  Status checkPeer() override;
  void notifyFailure(int failedRank) override;
  int reportedFailure() const override;
  SlotRegion slots() const override { return slots_.region(window_.nslots() * slotBytes_); }

 private:
  volatile uint64_t* credit() const { return reinterpret_cast<volatile uint64_t*>(credit_.data()); }
  Status waitReady();  // the receiver's queue pairs are ready to receive
  bool sendQueueFull(uint32_t ahead) const;

  RegisteredBuffer slots_;
  RegisteredBuffer credit_;  // [0] consumed count, [1] failure notice (rank + 1); written by the receiver
  std::unique_ptr<IbLink> link_;  // last: its queue pairs go before the memory they reach
  uint64_t remoteRing_;
  uint32_t remoteKey_;
  size_t slotBytes_;
  CreditWindow window_;
  uint64_t posted_ = 0;
  uint64_t postedWrs_ = 0, completedWrs_ = 0;
  bool ready_ = false;
  Status error_;
};

class IbRecvConnection final : public RecvConnection {
 public:
  IbRecvConnection(std::unique_ptr<IbLink> link, RegisteredBuffer slots, RegisteredBuffer control,
                   size_t slotBytes, int nslots);
  IbLink& link() { return *link_; }
  Status postReceives();
  // The sender's half arrived: connect, and learn where credits go.
  Status complete(const IbEndpointInfo& sender);
  const void* peek(size_t* bytes, uint32_t ahead) override;
  Status release() override;
  Status progress() override;
  Status checkPeer() override;
  void notifyFailure(int failedRank) override;
  int reportedFailure() const override { return notice_; }
  SlotRegion slots() const override {  // the NIC writes them: flushed before kernels read (GDR)
    SlotRegion r = slots_.region(window_.nslots() * slotBytes_);
    r.writtenByNic = r.onDevice;
    return r;
  }
  uint64_t ringAddress() const { return reinterpret_cast<uint64_t>(slots_.data()); }
  uint32_t ringKey() const { return slots_.key().rkey; }

 private:
  Status poll();
  Status writeControl(size_t offset, uint64_t value);

  RegisteredBuffer slots_;
  RegisteredBuffer control_;  // the values this end writes into the sender's credit words
  std::unique_ptr<IbLink> link_;  // last: its queue pairs go before the memory they reach
  size_t slotBytes_;
  CreditWindow window_;
  StripeTracker stripes_;
  std::vector<uint64_t> arrivedOn_;  // chunks each queue pair has delivered
  std::vector<uint32_t> sizes_;
  uint64_t remoteCredit_ = 0;
  uint32_t remoteCreditKey_ = 0;
  uint64_t consumed_ = 0, returned_ = 0;
  int notice_ = -1;
  Status error_;
};

}  // namespace tutti
