#include "src/bootstrap/root.h"

#include <cstring>
#include <thread>
#include <vector>

#include "src/common/log.h"

namespace tutti {

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

void runRoot(Socket listener, uint64_t magic, double timeoutSeconds) {
  Deadline deadline = Deadline::after(timeoutSeconds);
  std::vector<PendingRank> ranks;
  int nranks = -1;
  std::string where = listener.boundAddress().toString();
  while (nranks < 0 || static_cast<int>(ranks.size()) < nranks) {
    auto accepted = listener.accept(deadline);
    if (!accepted.ok()) {
      TUTTI_WARN(kSubsysBootstrap, "root %s: gave up with %zu of %d ranks joined: %s",
                 where.c_str(), ranks.size(), nranks, accepted.status().message().c_str());
      return;
    }
    Socket s = std::move(accepted.value());
    RootHello hello{};
    // A peer gets a few seconds to say hello; a silent one is dropped.
    Status st = s.recvAll(&hello, sizeof(hello), Deadline::after(5));
    if (!st.ok() || hello.magic != magic) {
      TUTTI_WARN(kSubsysBootstrap, "root %s: dropped a connection from %s: %s", where.c_str(),
                 s.peerAddress().toString().c_str(),
                 st.ok() ? "wrong magic (unique id of another job?)" : st.message().c_str());
      continue;
    }
    const RankInfo& in = hello.info;
    std::string problem;
    if (nranks < 0 && in.nranks > 0) nranks = in.nranks;
    if (in.nranks != nranks)
      problem = "rank " + std::to_string(in.rank) + " says nranks=" + std::to_string(in.nranks) +
                " but earlier ranks said " + std::to_string(nranks);
    else if (in.rank < 0 || in.rank >= nranks)
      problem = "rank " + std::to_string(in.rank) + " is out of range for nranks=" +
                std::to_string(nranks);
    for (const auto& r : ranks)
      if (r.info.rank == in.rank) problem = "rank " + std::to_string(in.rank) + " joined twice";
    if (!problem.empty()) {
      TUTTI_WARN(kSubsysBootstrap, "root %s: %s", where.c_str(), problem.c_str());
      sendError(s, problem, Deadline::after(5));
      continue;
    }
    ranks.push_back({std::move(s), in});
  }
  std::vector<RankInfo> table(nranks);
  for (const auto& r : ranks) table[r.info.rank] = r.info;
  RootReplyHeader ok{0, static_cast<int32_t>(table.size() * sizeof(RankInfo))};
  for (auto& r : ranks) {
    Status st = r.socket.sendAll(&ok, sizeof(ok), deadline);
    if (st.ok()) st = r.socket.sendAll(table.data(), ok.length, deadline);
    if (!st.ok())
      TUTTI_WARN(kSubsysBootstrap, "root %s: could not answer rank %d: %s", where.c_str(),
                 r.info.rank, st.message().c_str());
  }
  TUTTI_INFO(kSubsysBootstrap, "root %s: %d ranks joined", where.c_str(), nranks);
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
