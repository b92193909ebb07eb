#include "src/comm/diagnosis/progress_service.h"

#include <poll.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "src/bootstrap/unique_id.h"
#include "src/comm/diagnosis/progress_board.h"
#include "src/common/log.h"
#include "src/common/newcomers.h"

namespace tutti {

namespace {

constexpr uint64_t kQueryMagic = 0x5455545449505251ull;  // "TUTTIPRQ"

enum QueryKind : int32_t { kAsk = 0, kVerdict = 1 };

struct Query {
  uint64_t magic;
  uint64_t commMagic;
  int32_t nranks;
  int32_t kind;
  Verdict verdict;  // kVerdict
  RankOnHost ranks[ProgressService::kMaxRanksPerQuery];  // kAsk
};

// One listener and its thread; lives as long as the process.
class Responder {
 public:
  explicit Responder(Socket listener)
      : listener_(std::move(listener)),
        newcomers_(sizeof(Query), "progress service " + listener_.boundAddress().toString(), 1.0) {
    std::thread([this] { serve(); }).detach();
  }
  uint16_t port() const { return static_cast<uint16_t>(listener_.boundAddress().port()); }

 private:
  void serve() {
    for (;;) {
      newcomers_.wait(listener_, nullptr, 100);
      newcomers_.acceptAll(listener_);
      for (auto& g : newcomers_.progress()) answer(g);
    }
  }
  void answer(Newcomers::Greeted& g) {
    Query q;
    std::memcpy(&q, g.greeting.data(), sizeof(q));
    if (q.magic != kQueryMagic || q.nranks < 0 || q.nranks > ProgressService::kMaxRanksPerQuery ||
        (q.kind != kAsk && q.kind != kVerdict)) {
      newcomers_.drop(g.socket, "not a progress query");
      return;
    }
    if (q.kind == kVerdict) {
      ProgressService::recordVerdict(q.commMagic, q.verdict);
      return;
    }
    RankProgress reply[ProgressService::kMaxRanksPerQuery];
    for (int i = 0; i < q.nranks; ++i) reply[i] = lookUpLocal(q.commMagic, q.ranks[i]);
    // The asker waits for this; one that does not read is given up on soon.
    Status st = g.socket.sendAll(reply, sizeof(RankProgress) * q.nranks, Deadline::after(0.5));
    if (!st.ok()) newcomers_.drop(g.socket, st.message());
  }

  Socket listener_;
  Newcomers newcomers_;
};

}  // namespace

RankProgress lookUpLocal(uint64_t commMagic, const RankOnHost& r) {
  RankProgress p;
  p.rank = r.rank;
  p.answered = 1;
  p.state = static_cast<int32_t>(processState(r.pid));
  p.hasRecord = ProgressBoard::readPeer(r.pid, commMagic, r.rank, &p.record) ? 1 : 0;
  return p;
}

Result<uint16_t> ProgressService::listenOn(const SocketAddress& address) {
  static std::mutex mutex;
  static auto* responders = new std::map<std::string, std::unique_ptr<Responder>>();  // never freed: detached threads use them
  SocketAddress any = address;
  any.setPort(0);
  std::lock_guard<std::mutex> lock(mutex);
  auto& r = (*responders)[any.toString()];
  if (!r) {
    TUTTI_ASSIGN_OR_RETURN(Socket listener, Socket::listen(any));
    r = std::make_unique<Responder>(std::move(listener));
  }
  return r->port();
}

Result<std::vector<RankProgress>> ProgressService::ask(const SocketAddress& address, uint64_t commMagic,
                                                       const std::vector<RankOnHost>& ranks,
                                                       Deadline deadline) {
  std::vector<RankProgress> all;
  for (size_t first = 0; first < ranks.size(); first += kMaxRanksPerQuery) {
    Query q{};
    q.magic = kQueryMagic;
    q.kind = kAsk;
    q.commMagic = commMagic;
    q.nranks = static_cast<int32_t>(std::min<size_t>(kMaxRanksPerQuery, ranks.size() - first));
    std::memcpy(q.ranks, ranks.data() + first, sizeof(RankOnHost) * q.nranks);
    TUTTI_ASSIGN_OR_RETURN(Socket s, Socket::connect(address, deadline));
    TUTTI_RETURN_IF_ERROR(s.sendAll(&q, sizeof(q), deadline));
    std::vector<RankProgress> got(q.nranks);
    TUTTI_RETURN_IF_ERROR(s.recvAll(got.data(), sizeof(RankProgress) * got.size(), deadline));
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i].rank != ranks[first + i].rank) return RemoteError("progress service " + address.toString() + " answered about the wrong rank");
    all.insert(all.end(), got.begin(), got.end());
  }
  return all;
}

Status ProgressService::tell(const SocketAddress& address, uint64_t commMagic, const Verdict& v,
                             Deadline deadline) {
  Query q{};
  q.magic = kQueryMagic;
  q.commMagic = commMagic;
  q.kind = kVerdict;
  q.verdict = v;
  TUTTI_ASSIGN_OR_RETURN(Socket s, Socket::connect(address, deadline));
  return s.sendAll(&q, sizeof(q), deadline);
}

namespace {

struct Verdicts {
  std::atomic<int> count{0};  // the waiters' fast path: nothing recorded yet
  std::mutex mutex;
  std::map<uint64_t, Verdict> byComm;
};

Verdicts& verdicts() {
  static auto* v = new Verdicts();  // the service thread may outlive static destruction
  return *v;
}

}  // namespace

void ProgressService::recordVerdict(uint64_t commMagic, const Verdict& verdict) {
  constexpr size_t kMaxRemembered = 1024;  // strangers cannot grow it without bound
  Verdicts& v = verdicts();
  std::lock_guard<std::mutex> lock(v.mutex);
  if (v.byComm.size() >= kMaxRemembered) v.byComm.erase(v.byComm.begin());
  v.byComm.emplace(commMagic, verdict);  // the first verdict stands
  v.count.store(static_cast<int>(v.byComm.size()), std::memory_order_release);
}

Verdict ProgressService::verdict(uint64_t commMagic) {
  Verdicts& v = verdicts();
  if (v.count.load(std::memory_order_acquire) == 0) return {};
  std::lock_guard<std::mutex> lock(v.mutex);
  auto it = v.byComm.find(commMagic);
  return it == v.byComm.end() ? Verdict{} : it->second;
}

void tellEveryRank(const std::vector<RankInfo>& ranks, uint64_t commMagic, const Verdict& v, double seconds) {
  constexpr double kTrySeconds = 0.2;
  const Deadline deadline = Deadline::after(seconds);
  ProgressService::recordVerdict(commMagic, v);  // ranks of this process
  std::map<std::pair<uint64_t, int>, bool> told;  // one message per process
  told[{ranks[v.by].hostHash, ranks[v.by].pid}] = true;
  for (size_t r = 0; r < ranks.size() && !deadline.expired(); ++r) {
    if (ranks[r].progressPort <= 0) continue;
    if (!told.emplace(std::make_pair(ranks[r].hostHash, ranks[r].pid), true).second) continue;
    SocketAddress at = fromWire(ranks[r].bootstrapAddress);
    at.setPort(ranks[r].progressPort);
    (void)ProgressService::tell(at, commMagic, v, Deadline::after(kTrySeconds));
  }
}

std::vector<RankProgress> askEveryRank(const std::vector<RankInfo>& ranks, int self, uint64_t commMagic,
                                       double seconds) {
  constexpr double kTrySeconds = 0.5;  // a stopped process's kernel still accepts; its reply never comes
  const Deadline deadline = Deadline::after(seconds);
  std::vector<RankProgress> out(ranks.size());
  std::map<uint64_t, std::vector<int>> hosts;
  for (size_t r = 0; r < ranks.size(); ++r) {
    out[r].rank = static_cast<int32_t>(r);
    hosts[ranks[r].hostHash].push_back(static_cast<int>(r));
  }
  for (const auto& [hash, members] : hosts) {
    std::vector<RankOnHost> query;
    for (int r : members) query.push_back({r, ranks[r].pid});
    if (hash == ranks[self].hostHash) {
      for (size_t i = 0; i < query.size(); ++i) out[members[i]] = lookUpLocal(commMagic, query[i]);
      continue;
    }
    for (int r : members) {
      if (deadline.expired()) break;
      if (ranks[r].progressPort <= 0) continue;
      SocketAddress at = fromWire(ranks[r].bootstrapAddress);
      at.setPort(ranks[r].progressPort);
      auto got = ProgressService::ask(at, commMagic, query, Deadline::after(kTrySeconds));
      if (!got.ok()) continue;
      for (size_t i = 0; i < query.size(); ++i) out[members[i]] = (*got)[i];
      break;
    }
  }
  return out;
}

}  // namespace tutti
