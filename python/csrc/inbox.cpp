#include "inbox.h"

#include <c10/util/Exception.h>

#include <climits>
#include <cstring>
#include <stdexcept>

#include "tutti/tutti.h"

namespace tutti_torch {

std::string channelKey(int src, int dst) { return "tutti_p2p/" + std::to_string(src) + "->" + std::to_string(dst); }
std::string announceKey(int dst) { return "tutti_p2p/to" + std::to_string(dst); }

Inbox::Inbox(c10::intrusive_ptr<c10d::Store> store, int rank, int size, std::chrono::milliseconds timeout)
    : store_(std::move(store)), rank_(rank), size_(size), timeout_(timeout) {}

std::string Inbox::where(int peer) const {
  return "tutti backend, rank " + std::to_string(rank_) + ": recv from rank " + std::to_string(peer);
}

void Inbox::post(const at::Tensor& buffer, int src, int tag, Done done) {
  TORCH_CHECK(src == kAnySource || (src >= 0 && src < size_ && src != rank_), "tutti backend, rank ", rank_,
              ": recv from rank ", src, " (a group of ", size_, "; not from itself)");
  std::unique_lock<std::mutex> lock(mutex_);
  auto ended = channels_.find(src);
  if (ended != channels_.end() && ended->second.ended && ended->second.error) {
    auto error = ended->second.error;
    lock.unlock();
    done(src, error);
    return;
  }
  posted_.push_back(Posted{buffer, src, tag, std::move(done), std::chrono::steady_clock::now() + timeout_});
  if (!listener_.joinable()) listener_ = std::thread([self = shared_from_this()] { self->listen(); });
  changed_.notify_all();
}

void Inbox::expire() {
  std::vector<Posted> expired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto now = std::chrono::steady_clock::now();
    for (auto it = posted_.begin(); it != posted_.end();) {
      if (it->deadline <= now) {
        expired.push_back(std::move(*it));
        it = posted_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& p : expired)
    p.done(p.src, std::make_exception_ptr(std::runtime_error(
                      where(p.src) + " (tag " + std::to_string(p.tag) + ") Timed out after " +
                      std::to_string(timeout_.count()) + " ms: no message arrived")));
}

// Finds senders as they announce themselves; polls, as a blocking get would
// hold the store connection the caller's thread shares. Each round also
// fails the recvs whose time is up.
void Inbox::listen() {
  for (int64_t next = 1;;) {
    expire();
    std::string key = announceKey(rank_) + "/" + std::to_string(next);
    int src = -1;
    try {
      if (store_->check({key})) {
        std::vector<uint8_t> who = store_->get(key);
        src = std::stoi(std::string(who.begin(), who.end()));
      }
    } catch (const std::exception&) {
      return;  // the store is gone (its rank ended): nobody can announce itself now
    }
    std::unique_lock<std::mutex> lock(mutex_);
    if (closing_) return;
    if (src < 0) {
      changed_.wait_for(lock, std::chrono::milliseconds(10), [this] { return closing_; });
      continue;
    }
    channels_[src].thread = std::thread([self = shared_from_this(), src] { self->receiveFrom(src); });
    ++next;
  }
}

bool Inbox::takeMatch(int src, int tag, Posted* match) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    for (auto it = posted_.begin(); it != posted_.end(); ++it) {
      if ((it->src == src || it->src == kAnySource) && it->tag == tag) {
        *match = std::move(*it);
        posted_.erase(it);
        return true;
      }
    }
    if (closing_) return false;
    changed_.wait(lock);
  }
}

void Inbox::receiveFrom(int src) {
  tuttiComm_t comm = nullptr;
  auto check = [&](tuttiResult_t r, const char* what) {
    if (r != tuttiSuccess)
      throw std::runtime_error(where(src) + ": " + what + " failed (" + tuttiGetErrorString(r) +
                               "): " + tuttiGetLastError(comm));
  };
  try {
    std::vector<uint8_t> id = store_->get(channelKey(src, rank_));
    tuttiUniqueId uid;
    TORCH_CHECK(id.size() == sizeof uid.internal, where(src), ": the store holds a channel id of ", id.size(),
                " bytes");
    std::memcpy(uid.internal, id.data(), id.size());
    tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
    config.timeoutSeconds = INT_MAX / 4;  // the next envelope may be long in coming
    config.callsBesideCompute = 1;        // this thread waits while the others compute
    std::string name = "p2p " + std::to_string(src) + "->" + std::to_string(rank_);
    config.commName = name.c_str();
    check(tuttiCommInitRankConfig(&comm, 2, uid, 1, &config), "connecting");
    for (;;) {
      Envelope e{};
      check(tuttiRecv(&e, sizeof e, tuttiUint8, 0, comm, nullptr), "the envelope's recv");
      if (e.bytes == kCloseEnvelope) break;
      Posted p;
      bool matched = takeMatch(src, static_cast<int>(e.tag), &p);
      bool fits = matched && static_cast<int64_t>(p.buffer.nbytes()) == e.bytes;
      // A message nobody takes, or of the wrong size, is still read: the
      // next one follows it.
      at::Tensor into = fits ? p.buffer : at::empty({e.bytes}, at::kByte);
      if (e.bytes > 0)
        check(tuttiRecv(into.data_ptr(), static_cast<size_t>(e.bytes), tuttiUint8, 0, comm, nullptr), "recv");
      if (!matched) continue;
      if (fits) {
        p.done(src, nullptr);
      } else {
        p.done(src, std::make_exception_ptr(std::runtime_error(
                        where(src) + ": it sent " + std::to_string(e.bytes) + " bytes (tag " + std::to_string(e.tag) +
                        ") where this rank receives " + std::to_string(p.buffer.nbytes()))));
      }
    }
    endChannel(src, nullptr);
  } catch (...) {
    endChannel(src, std::current_exception());
  }
  if (comm) tuttiCommDestroy(comm);
}

// Recvs that only this sender could serve fail with why it ended.
void Inbox::endChannel(int src, std::exception_ptr error) {
  std::vector<Posted> orphans;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Channel& c = channels_[src];
    c.ended = true;
    c.error = error;
    if (error) {
      for (auto it = posted_.begin(); it != posted_.end();) {
        if (it->src == src) {
          orphans.push_back(std::move(*it));
          it = posted_.erase(it);
        } else {
          ++it;
        }
      }
    }
    changed_.notify_all();
  }
  for (auto& p : orphans) p.done(src, error);
}

void Inbox::close(std::chrono::steady_clock::time_point deadline) {
  std::deque<Posted> unserved;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
    unserved.swap(posted_);
    changed_.notify_all();
  }
  for (auto& p : unserved)
    p.done(p.src, std::make_exception_ptr(std::runtime_error(
                      where(p.src) + ": the process group was destroyed before a message arrived")));
  if (listener_.joinable()) listener_.join();
  std::unique_lock<std::mutex> lock(mutex_);
  for (auto& [src, c] : channels_) {
    bool ended = changed_.wait_until(lock, deadline, [&c = c] { return c.ended; });
    lock.unlock();
    if (ended) c.thread.join();
    else c.thread.detach();  // it holds this inbox and its communicator until its sender goes
    lock.lock();
  }
}

}  // namespace tutti_torch
