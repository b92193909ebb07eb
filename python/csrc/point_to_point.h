// Point-to-point calls on host tensors, asynchronous as PyTorch promises:
// isend and irecv complete whatever order the two ranks issue them in
// (batch_isend_irecv included), and recv can take any source.
//
// Each direction between two ranks is a two-rank tutti communicator of its
// own, made when the sender first sends and served by one thread on each end,
// so a send never waits behind this rank's collectives or its other sends.
// Every message carries an envelope (tag, bytes) that the receiving end
// matches to a posted recv (inbox.h), as gloo does. A rank learns that a new
// sender exists through the store (the sender announces itself), so nothing
// is made for pairs that never talk.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include "inbox.h"
#include "src/common/serial_worker.h"

namespace tutti_torch {

class PointToPoint {
 public:
  static constexpr int kAnySource = Inbox::kAnySource;
  // The peer (the source, for a recv) and the error, if any.
  using Done = Inbox::Done;

  PointToPoint(c10::intrusive_ptr<c10d::Store> store, int rank, int size, std::chrono::milliseconds timeout);
  // Delivers what was sent and tells every receiver this rank is done, then
  // waits (bounded by the timeout) for the senders to this rank to say so.
  ~PointToPoint();

  void send(const at::Tensor& buffer, int dst, int tag, Done done);
  void recv(const at::Tensor& buffer, int src, int tag, Done done) { inbox_->post(buffer, src, tag, std::move(done)); }

 private:
  // The channel to one receiver, made by the first send on its thread.
  struct Outgoing;
  Outgoing& outgoingTo(int dst);
  std::string where(int peer, const char* what) const;

  c10::intrusive_ptr<c10d::Store> store_;
  const int rank_, size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::map<int, std::unique_ptr<Outgoing>> outgoing_;
  std::shared_ptr<Inbox> inbox_;
};

}  // namespace tutti_torch
