// Point-to-point calls on host tensors, asynchronous as PyTorch promises:
// isend and irecv complete whatever order the two ranks issue them in
// (batch_isend_irecv included), and recv can take any source.
//
// Each direction between two ranks is a two-rank tutti communicator of its
// own, made when the sender first sends and served by one thread on each end,
// so a send never waits behind this rank's collectives or its other sends.
// Every message carries an envelope (tag, bytes); the receiving end matches
// it to the oldest posted recv for that source, or for any source, with that
// tag, as gloo does. A rank learns that a new sender exists through the store
// (the sender announces itself), so nothing is made for pairs that never talk.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "src/common/serial_worker.h"

namespace tutti_torch {

class PointToPoint {
 public:
  static constexpr int kAnySource = -1;
  // The source rank (the destination for a send) and the error, if any.
  using Done = std::function<void(int peer, std::exception_ptr error)>;

  PointToPoint(c10::intrusive_ptr<c10d::Store> store, int rank, int size, std::chrono::milliseconds timeout);
  // Tells every receiver this rank is done sending, then waits (bounded by
  // the timeout) for the ends of the senders to this rank.
  ~PointToPoint();

  void send(const at::Tensor& buffer, int dst, int tag, Done done);
  void recv(const at::Tensor& buffer, int src, int tag, Done done);

 private:
  struct Outgoing;
  struct Incoming {
    std::thread thread;
    void* comm = nullptr;     // tuttiComm_t, once made
    bool waiting = false;     // in the envelope's receive, where only an abort reaches it
    bool ended = false;
    std::exception_ptr error;  // why the channel ended, for later recvs from it
  };
  struct Posted {
    at::Tensor buffer;
    int src;
    int tag;
    Done done;
  };

  Outgoing& outgoingTo(int dst);
  void startListening();
  void listen();
  void receiveFrom(int src);
  void endChannel(int src, std::exception_ptr error);
  // Waits for the oldest posted recv that takes (src, tag); false when this
  // end is stopping and nobody will post one.
  bool takeMatch(int src, int tag, Posted* match);
  std::string where(int peer, const char* call) const;
  int timeoutSeconds() const;

  c10::intrusive_ptr<c10d::Store> store_;
  const int rank_, size_;
  const std::chrono::milliseconds timeout_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, std::unique_ptr<Outgoing>> outgoing_;
  std::deque<Posted> recvs_;
  std::map<int, Incoming> incoming_;
  bool stopping_ = false;
  std::thread listener_;
};

}  // namespace tutti_torch
