#include "src/comm/group.h"

#include <deque>
#include <map>

#include "kernels/reducer.h"

namespace tutti {

namespace {

struct QueuedCall {
  Communicator* comm;
  CollectiveArgs args;
  Plan plan;
};

struct GroupState {
  int depth = 0;
  std::deque<QueuedCall> calls;  // deque: plans keep their address
};
thread_local GroupState tGroup;

bool isP2P(Collective c) { return c == Collective::kSend || c == Collective::kRecv; }

// Connects what the calls' send/recv need, across all communicators: each
// phase runs on every communicator before the next phase starts.
Status connectP2P(const std::vector<std::pair<Communicator*, const CollectiveArgs*>>& calls) {
  std::map<Communicator*, Connector> connectors;
  for (const auto& [comm, args] : calls)
    if (isP2P(args->collective)) comm->requestP2P(args->collective, args->root, &connectors[comm]);
  for (auto& [comm, c] : connectors) TUTTI_RETURN_IF_ERROR(c.listenAll());
  for (auto& [comm, c] : connectors) TUTTI_RETURN_IF_ERROR(c.connectAll());
  for (auto& [comm, c] : connectors) TUTTI_RETURN_IF_ERROR(c.acceptAll());
  return Status::Ok();
}

}  // namespace

void groupStart() { ++tGroup.depth; }

bool groupActive() { return tGroup.depth > 0; }

Status groupEnd(std::vector<Communicator*>* failedComms) {
  if (tGroup.depth == 0) return InvalidUsage("tuttiGroupEnd without a matching tuttiGroupStart");
  if (--tGroup.depth > 0) return Status::Ok();
  std::deque<QueuedCall> calls;
  calls.swap(tGroup.calls);
  if (calls.empty()) return Status::Ok();
  std::vector<std::pair<Communicator*, const CollectiveArgs*>> list;
  for (auto& c : calls) list.push_back({c.comm, &c.args});
  auto recordFailure = [&]() {
    for (auto& c : calls) {
      bool seen = false;
      for (Communicator* f : *failedComms) seen |= f == c.comm;
      if (!seen) failedComms->push_back(c.comm);
    }
  };
  Status st = connectP2P(list);
  if (!st.ok()) {
    recordFailure();
    return st;
  }
  std::vector<Work> works(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) calls[i].comm->prepare(calls[i].args, &calls[i].plan, &works[i]);
  st = execute(works.data(), works.size(), hostReducer(), calls.front().comm->execOptions());
  if (!st.ok()) recordFailure();
  return st;
}

Status submit(Communicator* comm, const CollectiveArgs& args) {
  if (groupActive()) {
    tGroup.calls.push_back({comm, args, {}});
    return Status::Ok();
  }
  // Connections are made on first use only: steady-state calls allocate nothing.
  if (isP2P(args.collective) && !comm->hasP2P(args.collective, args.root))
    TUTTI_RETURN_IF_ERROR(connectP2P({{comm, &args}}));
  Work work;
  comm->prepare(args, comm->scratchPlan(), &work);
  return execute(&work, 1, hostReducer(), comm->execOptions());
}

}  // namespace tutti
