#include "src/bootstrap/root.h"

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "src/common/log.h"
#include "src/common/newcomers.h"

namespace tutti {

static_assert(static_cast<int64_t>(kMaxRanks) * sizeof(RankInfo) <= INT32_MAX,
              "the root's answer must fit its length field");

namespace {

struct PendingRank {
  Socket socket;
  RankInfo info;
};

void sendError(Socket& s, const std::string& message, Deadline deadline) {
  RootReplyHeader h{1, static_cast<int32_t>(message.size())};
  (void)s.sendAll(&h, sizeof(h), deadline);
  (void)s.sendAll(message.data(), message.size(), deadline);
}

// Everything in a hello that a stranger could get wrong; "" when it is sound.
std::string checkHello(const RankInfo& in, int nranks, const std::vector<PendingRank>& ranks) {
  if (in.nranks <= 0 || in.nranks > kMaxRanks)
    return "nranks=" + std::to_string(in.nranks) + " is out of range [1, " +
           std::to_string(kMaxRanks) + "]";
  if (nranks > 0 && in.nranks != nranks)
    return "rank " + std::to_string(in.rank) + " says nranks=" + std::to_string(in.nranks) +
           " but earlier ranks said " + std::to_string(nranks);
  if (in.rank < 0 || in.rank >= in.nranks)
    return "rank " + std::to_string(in.rank) + " is out of range for nranks=" +
           std::to_string(in.nranks);
  for (const auto& r : ranks)
    if (r.info.rank == in.rank) return "rank " + std::to_string(in.rank) + " joined twice";
  return "";
}

// Hellos are read side by side (Newcomers): a connection that stays silent
// or sends garbage is dropped without delaying the genuine ranks.
void runRoot(Socket listener, uint64_t magic, double timeoutSeconds) {
  Deadline deadline = Deadline::after(timeoutSeconds);
  std::vector<PendingRank> ranks;
  int nranks = -1;
  std::string where = "root " + listener.boundAddress().toString();
  Newcomers newcomers(sizeof(RootHello), where);
  while (nranks < 0 || static_cast<int>(ranks.size()) < nranks) {
    if (deadline.expired()) {
      TUTTI_WARN(kSubsysBootstrap, "%s: gave up with %zu of %d ranks joined before the timeout",
                 where.c_str(), ranks.size(), nranks);
      return;
    }
    newcomers.wait(listener, nullptr, deadline.remainingMs(100));
    newcomers.acceptAll(listener);
    for (auto& greeted : newcomers.progress()) {
      RootHello hello;
      std::memcpy(&hello, greeted.greeting.data(), sizeof(hello));
      if (hello.magic != magic) {
        newcomers.drop(greeted.socket, "wrong magic (unique id of another job?)");
        continue;
      }
      RankInfo& in = hello.info;
      in.hostname[sizeof(in.hostname) - 1] = '\0';
      std::string problem = checkHello(in, nranks, ranks);
      if (!problem.empty()) {
        TUTTI_WARN(kSubsysBootstrap, "%s: %s", where.c_str(), problem.c_str());
        sendError(greeted.socket, problem, Deadline::after(1));
        continue;
      }
      if (nranks < 0) nranks = in.nranks;
      ranks.push_back({std::move(greeted.socket), in});
    }
  }
  std::vector<RankInfo> table(nranks);
  for (const auto& r : ranks) table[r.info.rank] = r.info;
  RootReplyHeader ok{0, static_cast<int32_t>(table.size() * sizeof(RankInfo))};
  for (auto& r : ranks) {
    Status st = r.socket.sendAll(&ok, sizeof(ok), deadline);
    if (st.ok()) st = r.socket.sendAll(table.data(), ok.length, deadline);
    if (!st.ok())
      TUTTI_WARN(kSubsysBootstrap, "%s: could not answer rank %d: %s", where.c_str(),
                 r.info.rank, st.message().c_str());
  }
  TUTTI_INFO(kSubsysBootstrap, "%s: %d ranks joined", where.c_str(), nranks);
}

}  // namespace

Result<BootstrapHandle> startRoot(const SocketAddress& address, uint64_t magic,
                                  double timeoutSeconds) {
  TUTTI_ASSIGN_OR_RETURN(Socket listener, Socket::listen(address));
  BootstrapHandle handle;
  handle.magic = magic;
  handle.root = toWire(listener.boundAddress());
  std::thread(runRoot, std::move(listener), magic, timeoutSeconds).detach();
  return handle;
}

}  // namespace tutti
