#include "src/common/newcomers.h"

#include "src/common/log.h"

namespace tutti {

Newcomers::Newcomers(size_t greetingBytes, std::string where, double patienceSeconds)
    : greetingBytes_(greetingBytes), where_(std::move(where)), patienceSeconds_(patienceSeconds) {}

void Newcomers::drop(const Socket& socket, const std::string& why) const {
  TUTTI_WARN(kSubsysBootstrap | kSubsysNet, "%s: dropped a connection from %s: %s", where_.c_str(),
             socket.peerAddress().toString().c_str(), why.c_str());
}

void Newcomers::wait(const Socket& listener, std::vector<pollfd>* others, int timeoutMs) {
  std::vector<pollfd> fds;
  fds.push_back({listener.fd(), POLLIN, 0});
  for (const Pending& p : pending_) fds.push_back({p.socket.fd(), POLLIN, 0});
  const size_t mine = fds.size();
  if (others) fds.insert(fds.end(), others->begin(), others->end());
  int rc = ::poll(fds.data(), fds.size(), timeoutMs);
  if (others)
    for (size_t i = 0; i < others->size(); ++i) (*others)[i].revents = rc > 0 ? fds[mine + i].revents : 0;
}

void Newcomers::acceptAll(Socket& listener) {
  for (;;) {
    auto accepted = listener.tryAccept();
    if (!accepted.ok()) {
      TUTTI_WARN(kSubsysBootstrap | kSubsysNet, "%s: %s", where_.c_str(), accepted.status().message().c_str());
      return;
    }
    if (!accepted->valid()) return;
    if (pending_.size() >= kMaxPending) {
      drop(pending_.front().socket, "more than " + std::to_string(kMaxPending) +
                                        " connections waiting to introduce themselves");
      pending_.pop_front();
    }
    Pending p;
    p.socket = std::move(accepted.value());
    p.bytes.resize(greetingBytes_);
    p.deadline = Deadline::after(patienceSeconds_);
    pending_.push_back(std::move(p));
  }
}

std::vector<Newcomers::Greeted> Newcomers::progress() {
  std::vector<Greeted> done;
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending& p = *it;
    Status st;
    while (st.ok() && p.got < greetingBytes_) {
      auto n = p.socket.tryRecv(p.bytes.data() + p.got, greetingBytes_ - p.got);
      if (!n.ok()) st = n.status();
      else if (*n == 0) break;
      else p.got += *n;
    }
    if (p.got == greetingBytes_) {
      done.push_back({std::move(p.socket), std::move(p.bytes)});
    } else if (!st.ok() || p.deadline.expired()) {
      drop(p.socket, st.ok() ? "no greeting within " + std::to_string(patienceSeconds_) + " s (" +
                                   std::to_string(p.got) + " of " + std::to_string(greetingBytes_) +
                                   " bytes)"
                             : st.message());
    } else {
      ++it;
      continue;
    }
    it = pending_.erase(it);
  }
  return done;
}

}  // namespace tutti
