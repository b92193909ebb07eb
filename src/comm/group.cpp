#include "src/comm/group.h"

#include <deque>
#include <map>

#include "kernels/reducer.h"
#include "src/comm/diagnosis/call_check.h"
#include "src/common/clock.h"
#include "src/common/log.h"

namespace tutti {

namespace {

thread_local GroupCalls tGroupCalls;

}  // namespace

// Apart from the calls: a thread-local with a constructor is reached
// through an init check, and every call asks the depth.
thread_local int tGroupDepth = 0;

Status connectPlans(const std::vector<PlanToConnect>& plans) {
  std::map<Communicator*, Connector> connectors;
  bool any = false;
  for (const PlanToConnect& p : plans) any |= p.comm->requestConnections(*p.plan, p.memory, &connectors[p.comm]);
  if (!any) return Status::Ok();
  for (auto& [comm, c] : connectors) TUTTI_RETURN_IF_ERROR(c.listenAll());
  for (auto& [comm, c] : connectors) TUTTI_RETURN_IF_ERROR(c.connectAll());
  for (auto& [comm, c] : connectors) TUTTI_RETURN_IF_ERROR(c.acceptAll());
  return Status::Ok();
}

void groupStart() { ++tGroupDepth; }

Result<std::shared_ptr<GroupCalls>> groupEnd() {
  if (tGroupDepth == 0) return InvalidUsage("tuttiGroupEnd without a matching tuttiGroupStart");
  if (--tGroupDepth > 0) return std::shared_ptr<GroupCalls>();
  auto calls = std::make_shared<GroupCalls>();
  calls->swap(tGroupCalls);
  return calls;
}

Status runGroup(GroupCalls& calls, std::vector<Communicator*>* failedComms) {
  if (calls.empty()) return Status::Ok();
  auto recordFailure = [&]() {
    for (auto& c : calls) {
      bool seen = false;
      for (Communicator* f : *failedComms) seen |= f == c.comm;
      if (!seen) failedComms->push_back(c.comm);
    }
  };
  std::vector<Work> works(calls.size());
  std::vector<PlanToConnect> plans;
  Status st;
  for (size_t i = 0; i < calls.size() && st.ok(); ++i) {
    st = calls[i].comm->prepare(calls[i].args, &calls[i].plan, &works[i]);
    plans.push_back({calls[i].comm, &calls[i].plan, Memory::kHost});
  }
  if (st.ok()) st = calls.front().comm->explainSetupFailure(connectPlans(plans));
  if (st.ok()) st = execute(works.data(), works.size(), hostReducer(), calls.front().comm->execOptions());
  if (!st.ok()) recordFailure();
  return st;
}

Status submit(Communicator* comm, const CollectiveArgs& args) {
  if (groupActive()) {
    tGroupCalls.push_back({comm, args, {}});
    return Status::Ok();
  }
  if (comm->config().checkCalls) TUTTI_RETURN_IF_ERROR(checkSameCall(comm, args));
  return runNow(comm, args);
}

Status runPlanned(Communicator* comm, const CollectiveArgs& args) {
  Work work;
  TUTTI_RETURN_IF_ERROR(comm->prepare(args, comm->scratchPlan(), &work));
  // Connections are made on first use only: steady-state calls allocate nothing.
  Connector connector;
  if (comm->requestConnections(*work.plan, Memory::kHost, &connector))
    TUTTI_RETURN_IF_ERROR(comm->explainSetupFailure(connector.run()));
  const bool log = log_detail::enabled(LogLevel::kInfo, kSubsysTuning) && !args.internal;
  const bool keep = comm->keepsTimeOf(args);
  if (!log && !keep) return execute(&work, 1, hostReducer(), comm->execOptions());
  const int64_t t0 = nowNs();
  Status st = execute(&work, 1, hostReducer(), comm->execOptions());
  const double tookUs = static_cast<double>(nowNs() - t0) / 1e3;
  if (log) comm->logTook(args, tookUs);
  if (keep && st.ok()) comm->keepTime(args, tookUs);
  return st;
}

}  // namespace tutti
