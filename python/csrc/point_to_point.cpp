#include "point_to_point.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

#include "tutti/tutti.h"

namespace tutti_torch {

struct PointToPoint::Outgoing {
  tuttiComm_t comm = nullptr;
  std::exception_ptr broken;   // the channel could not be made, or failed
  tutti::SerialWorker worker;  // last: its queued sends run before the rest goes
};

PointToPoint::PointToPoint(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                           std::chrono::milliseconds timeout)
    : store_(store), rank_(rank), size_(size), timeout_(timeout), inbox_(std::make_shared<Inbox>(store, rank, size, timeout)) {}

std::string PointToPoint::where(int peer, const char* what) const {
  return "tutti backend, rank " + std::to_string(rank_) + ": send to rank " + std::to_string(peer) + ": " + what;
}

PointToPoint::Outgoing& PointToPoint::outgoingTo(int dst) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& out = outgoing_[dst];
  if (out) return *out;
  out = std::make_unique<Outgoing>();
  Outgoing* o = out.get();
  // On its own thread: the receiver joins only when it first receives.
  o->worker.post([this, o, dst] {
    try {
      tuttiUniqueId id;
      tuttiResult_t r = tuttiGetUniqueId(&id);
      if (r != tuttiSuccess)
        throw std::runtime_error(where(dst, "tuttiGetUniqueId failed: ") + tuttiGetLastError(nullptr));
      store_->set(channelKey(rank_, dst), std::vector<uint8_t>(id.internal, id.internal + sizeof(id.internal)));
      int64_t n = store_->add(announceKey(dst), 1);
      std::string me = std::to_string(rank_);
      store_->set(announceKey(dst) + "/" + std::to_string(n), std::vector<uint8_t>(me.begin(), me.end()));
      tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
      auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout_).count();
      config.timeoutSeconds = static_cast<int>(std::clamp<int64_t>(seconds, 1, INT_MAX / 4));
      config.callsBesideCompute = 1;  // sent by the worker while the caller computes
      std::string name = "p2p " + me + "->" + std::to_string(dst);
      config.commName = name.c_str();
      r = tuttiCommInitRankConfig(&o->comm, 2, id, 0, &config);
      if (r != tuttiSuccess)
        throw std::runtime_error(where(dst, "connecting failed: ") + tuttiGetLastError(nullptr));
    } catch (...) {
      o->broken = std::current_exception();
    }
  });
  return *o;
}

void PointToPoint::send(const at::Tensor& buffer, int dst, int tag, Done done) {
  TORCH_CHECK(dst >= 0 && dst < size_ && dst != rank_, "tutti backend, rank ", rank_, ": send to rank ", dst,
              " (a group of ", size_, "; not to itself)");
  Outgoing& o = outgoingTo(dst);
  o.worker.post([this, &o, buffer, dst, tag, done] {
    auto check = [&](tuttiResult_t r, const char* what) {
      if (r != tuttiSuccess)
        throw std::runtime_error(where(dst, what) + " failed (" + tuttiGetErrorString(r) +
                                 "): " + tuttiGetLastError(o.comm));
    };
    try {
      if (o.broken) std::rethrow_exception(o.broken);
      Envelope e{tag, static_cast<int64_t>(buffer.nbytes())};
      check(tuttiSend(&e, sizeof e, tuttiUint8, 1, o.comm, nullptr), "the envelope's send");
      if (e.bytes > 0) check(tuttiSend(buffer.data_ptr(), buffer.nbytes(), tuttiUint8, 1, o.comm, nullptr), "send");
      done(dst, nullptr);
    } catch (...) {
      if (!o.broken) o.broken = std::current_exception();
      done(dst, std::current_exception());
    }
  });
}

PointToPoint::~PointToPoint() {
  // Senders first: what was sent is delivered (a closing inbox reads and
  // drops what nobody takes), then each receiver hears that this rank is done.
  std::map<int, std::unique_ptr<Outgoing>> outgoing;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    outgoing.swap(outgoing_);
  }
  for (auto& [dst, o] : outgoing) {
    Outgoing* out = o.get();
    out->worker.post([out] {
      if (out->broken || !out->comm) return;
      Envelope e{0, kCloseEnvelope};
      tuttiSend(&e, sizeof e, tuttiUint8, 1, out->comm, nullptr);
    });
  }
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  inbox_->close(deadline);
  for (auto& [dst, o] : outgoing) {
    o->worker.drain();
    if (o->comm) tuttiCommDestroy(o->comm);
  }
}

}  // namespace tutti_torch
