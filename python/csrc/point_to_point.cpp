#include "point_to_point.h"

#include <c10/util/Exception.h>

#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tutti/tutti.h"

namespace tutti_torch {

namespace {

// What precedes every message; bytes < 0 says the sender is done.
struct Envelope {
  int64_t tag;
  int64_t bytes;
};
constexpr int64_t kClose = -1;

// In the group's store (a PrefixStore per group).
std::string channelKey(int src, int dst) {
  return "tutti_p2p/" + std::to_string(src) + "->" + std::to_string(dst);
}
std::string announceKey(int dst) { return "tutti_p2p/to" + std::to_string(dst); }

std::vector<uint8_t> bytesOf(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
std::string textOf(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

tuttiComm_t asComm(void* c) { return static_cast<tuttiComm_t>(c); }

void check(tuttiResult_t result, tuttiComm_t comm, const std::string& where) {
  if (result == tuttiSuccess) return;
  throw std::runtime_error(where + " failed (" + tuttiGetErrorString(result) + "): " + tuttiGetLastError(comm));
}

tuttiComm_t makeChannel(const tuttiUniqueId& id, int rank, int timeoutSeconds, const std::string& name,
                        const std::string& where) {
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  config.timeoutSeconds = timeoutSeconds;
  config.commName = name.c_str();
  tuttiComm_t comm = nullptr;
  check(tuttiCommInitRankConfig(&comm, 2, id, rank, &config), nullptr, where);
  return comm;
}

}  // namespace

struct PointToPoint::Outgoing {
  tuttiComm_t comm = nullptr;
  std::exception_ptr broken;  // the channel could not be made, or failed
  tutti::SerialWorker worker;  // last: its queued sends run before the rest goes
};

PointToPoint::PointToPoint(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                           std::chrono::milliseconds timeout)
    : store_(std::move(store)), rank_(rank), size_(size), timeout_(timeout) {}

std::string PointToPoint::where(int peer, const char* call) const {
  return std::string("tutti backend, rank ") + std::to_string(rank_) + ": " + call + " with rank " +
         std::to_string(peer);
}

int PointToPoint::timeoutSeconds() const {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(timeout_).count();
  return s > 0 ? static_cast<int>(std::min<int64_t>(s, INT_MAX / 4)) : 1;
}

// ------------------------------------------------------------------ sending

PointToPoint::Outgoing& PointToPoint::outgoingTo(int dst) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& out = outgoing_[dst];
  if (out) return *out;
  out = std::make_unique<Outgoing>();
  Outgoing* o = out.get();
  // Made on its own thread: the receiver joins only when it first receives.
  o->worker.post([this, o, dst] {
    try {
      tuttiUniqueId id;
      check(tuttiGetUniqueId(&id), nullptr, where(dst, "tuttiGetUniqueId for send"));
      store_->set(channelKey(rank_, dst), std::vector<uint8_t>(id.internal, id.internal + sizeof(id.internal)));
      int64_t n = store_->add(announceKey(dst), 1);
      store_->set(announceKey(dst) + "/" + std::to_string(n), bytesOf(std::to_string(rank_)));
      o->comm = makeChannel(id, 0, timeoutSeconds(), "p2p " + std::to_string(rank_) + "->" + std::to_string(dst),
                            where(dst, "connecting for send"));
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
    try {
      if (o.broken) std::rethrow_exception(o.broken);
      Envelope e{tag, static_cast<int64_t>(buffer.nbytes())};
      check(tuttiSend(&e, sizeof e, tuttiUint8, 1, o.comm, nullptr), o.comm, where(dst, "send (envelope)"));
      if (e.bytes > 0)
        check(tuttiSend(buffer.data_ptr(), buffer.nbytes(), tuttiUint8, 1, o.comm, nullptr), o.comm,
              where(dst, "send"));
      done(dst, nullptr);
    } catch (...) {
      if (!o.broken) o.broken = std::current_exception();
      done(dst, std::current_exception());
    }
  });
}

// ---------------------------------------------------------------- receiving

void PointToPoint::recv(const at::Tensor& buffer, int src, int tag, Done done) {
  TORCH_CHECK(src == kAnySource || (src >= 0 && src < size_ && src != rank_), "tutti backend, rank ", rank_,
              ": recv from rank ", src, " (a group of ", size_, "; not from itself)");
  std::unique_lock<std::mutex> lock(mutex_);
  if (src != kAnySource) {
    auto it = incoming_.find(src);
    if (it != incoming_.end() && it->second.ended && it->second.error) {
      lock.unlock();
      done(src, it->second.error);
      return;
    }
  }
  recvs_.push_back(Posted{buffer, src, tag, std::move(done)});
  if (!listener_.joinable()) listener_ = std::thread([this] { listen(); });
  changed_.notify_all();
}

// Finds senders as they announce themselves; polls, as a blocking get would
// hold the store's connection that the caller's thread shares.
void PointToPoint::listen() {
  for (int64_t next = 1;;) {
    std::string key = announceKey(rank_) + "/" + std::to_string(next);
    bool announced = false;
    try {
      announced = store_->check({key});
    } catch (const std::exception&) {
      return;  // the store is gone (its host rank ended): no sender can announce itself
    }
    std::unique_lock<std::mutex> lock(mutex_);
    if (stopping_) return;
    if (!announced) {
      changed_.wait_for(lock, std::chrono::milliseconds(10), [this] { return stopping_; });
      continue;
    }
    lock.unlock();
    int src = -1;
    try {
      src = std::stoi(textOf(store_->get(key)));
    } catch (const std::exception&) {
      return;
    }
    lock.lock();
    incoming_[src].thread = std::thread([this, src] { receiveFrom(src); });
    ++next;
  }
}

bool PointToPoint::takeMatch(int src, int tag, Posted* match) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    for (auto it = recvs_.begin(); it != recvs_.end(); ++it) {
      if ((it->src == src || it->src == kAnySource) && it->tag == tag) {
        *match = std::move(*it);
        recvs_.erase(it);
        return true;
      }
    }
    if (stopping_) return false;
    changed_.wait(lock);
  }
}

void PointToPoint::receiveFrom(int src) {
  tuttiComm_t comm = nullptr;
  try {
    std::vector<uint8_t> id = store_->get(channelKey(src, rank_));
    tuttiUniqueId uid;
    TORCH_CHECK(id.size() == sizeof uid.internal, where(src, "recv"), ": the store holds a channel id of ",
                id.size(), " bytes");
    std::memcpy(uid.internal, id.data(), id.size());
    // Waits for the next envelope have no bound: a sender may stay quiet.
    comm = makeChannel(uid, 1, INT_MAX / 4, "p2p " + std::to_string(src) + "->" + std::to_string(rank_),
                       where(src, "connecting for recv"));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      incoming_[src].comm = comm;
    }
    for (;;) {
      Envelope e{};
      {
        std::lock_guard<std::mutex> lock(mutex_);
        incoming_[src].waiting = true;
      }
      tuttiResult_t r = tuttiRecv(&e, sizeof e, tuttiUint8, 0, comm, nullptr);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        incoming_[src].waiting = false;
        if (!incoming_[src].comm) throw std::runtime_error(where(src, "recv") + ": aborted at destroy");
      }
      check(r, comm, where(src, "recv (envelope)"));
      if (e.bytes == kClose) break;
      Posted p;
      bool matched = takeMatch(src, static_cast<int>(e.tag), &p);
      bool fits = matched && static_cast<int64_t>(p.buffer.nbytes()) == e.bytes;
      // A message nobody takes, or of the wrong size, is still read: the
      // next one follows it.
      at::Tensor into = fits ? p.buffer : at::empty({e.bytes}, at::kByte);
      if (e.bytes > 0)
        check(tuttiRecv(into.data_ptr(), static_cast<size_t>(e.bytes), tuttiUint8, 0, comm, nullptr), comm,
              where(src, "recv"));
      if (!matched) continue;
      if (fits) {
        p.done(src, nullptr);
      } else {
        p.done(src, std::make_exception_ptr(std::runtime_error(
                        where(src, "recv") + ": rank " + std::to_string(src) + " sent " + std::to_string(e.bytes) +
                        " bytes (tag " + std::to_string(e.tag) + ") where this rank receives " +
                        std::to_string(p.buffer.nbytes()))));
      }
    }
    endChannel(src, nullptr);
  } catch (...) {
    endChannel(src, std::current_exception());
  }
}

// Recvs that only this sender could serve fail with why it ended.
void PointToPoint::endChannel(int src, std::exception_ptr error) {
  std::vector<Posted> orphans;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Incoming& in = incoming_[src];
    in.ended = true;
    in.error = error;
    if (error) {
      for (auto it = recvs_.begin(); it != recvs_.end();) {
        if (it->src == src) {
          orphans.push_back(std::move(*it));
          it = recvs_.erase(it);
        } else {
          ++it;
        }
      }
    }
    changed_.notify_all();
  }
  for (auto& p : orphans) p.done(src, error);
}

// --------------------------------------------------------------- shutdown

PointToPoint::~PointToPoint() {
  // Senders first: what was sent is delivered (a stopping receiver reads and
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
      Envelope e{0, kClose};
      tuttiSend(&e, sizeof e, tuttiUint8, 1, out->comm, nullptr);
    });
  }
  std::vector<Posted> unserved;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    unserved.assign(std::make_move_iterator(recvs_.begin()), std::make_move_iterator(recvs_.end()));
    recvs_.clear();
    changed_.notify_all();
  }
  for (auto& p : unserved)
    p.done(p.src, std::make_exception_ptr(std::runtime_error(
                      where(p.src, "recv") + ": the process group was destroyed before a message arrived")));
  if (listener_.joinable()) listener_.join();
  for (auto& [dst, o] : outgoing) {
    Outgoing* out = o.get();
    out->worker.drain();
    if (out->comm) tuttiCommDestroy(out->comm);
  }
  outgoing.clear();
  // Each sender's end arrives with its close (or its death). One that outlives
  // the timeout without closing is aborted where it waits for an envelope.
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::unique_lock<std::mutex> lock(mutex_);
  for (auto& [src, in] : incoming_) {
    if (!changed_.wait_until(lock, deadline, [&in = in] { return in.ended; }) && in.waiting && in.comm) {
      tuttiCommAbort(asComm(in.comm));
      in.comm = nullptr;
    }
  }
  for (auto& [src, in] : incoming_) {
    lock.unlock();
    if (in.thread.joinable()) in.thread.join();
    lock.lock();
    if (in.comm) tuttiCommDestroy(asComm(in.comm));
  }
}

}  // namespace tutti_torch
