#include "src/comm/diagnosis/call_check.h"

#include <vector>

#include "src/comm/group.h"
#include "src/comm/diagnosis/hang_report.h"

namespace tutti {

Status checkSameCall(Communicator* comm, const CollectiveArgs& args) {
  if (args.collective == Collective::kSend || args.collective == Collective::kRecv) return Status::Ok();
  CallSignature mine = args.signature(0);
  std::vector<CallSignature> all(comm->size());
  CollectiveArgs gather;
  gather.collective = Collective::kAllGather;
  gather.input = &mine;
  gather.output = all.data();
  gather.count = sizeof(CallSignature);
  gather.internal = true;
  gather.dtype = DataType::kUint8;
  comm->announce(args);
  TUTTI_RETURN_IF_ERROR(runNow(comm, gather));
  const uint64_t call = comm->lastSequence() + 1;  // the number the checked call will get
  for (int r = 0; r < comm->size(); ++r) {
    if (sameCall(all[r], mine)) continue;
    return InvalidUsage("rank " + std::to_string(r) + " called " + describeCall(all[r]) + " as call #" +
                        std::to_string(call) + " while rank " + std::to_string(comm->rank()) + " called " +
                        describeCall(mine) + " (TUTTI_CHECK_CALLS)");
  }
  return Status::Ok();
}

}  // namespace tutti
