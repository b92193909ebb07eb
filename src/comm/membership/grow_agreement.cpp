#include "src/comm/membership/grow_agreement.h"

#include <string>
#include <vector>

namespace tutti {

namespace {

struct GrowOffer {
  int32_t hasId;
  int32_t pad;
  BootstrapHandle handle;
};

}  // namespace

Result<BootstrapHandle> agreeOnGrowRendezvous(Exchange& parent, const BootstrapHandle* mine) {
  std::vector<GrowOffer> offers(parent.size());
  offers[parent.rank()] = {mine ? 1 : 0, 0, mine ? *mine : BootstrapHandle{}};
  TUTTI_RETURN_IF_ERROR(parent.allgather(offers.data(), sizeof(GrowOffer)));
  std::vector<int> coordinators;
  for (int r = 0; r < parent.size(); ++r)
    if (offers[r].hasId) coordinators.push_back(r);
  if (coordinators.size() == 1) return offers[coordinators.front()].handle;
  if (coordinators.empty())
    return InvalidUsage("no rank of the communicator passed the id of tuttiCommGetUniqueId: its coordinator "
                        "passes it, the other existing ranks NULL");
  return InvalidUsage("ranks " + std::to_string(coordinators[0]) + " and " + std::to_string(coordinators[1]) +
                      " both passed an id: only the coordinator that called tuttiCommGetUniqueId does");
}

}  // namespace tutti
