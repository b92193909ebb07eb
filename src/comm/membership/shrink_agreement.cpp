#include "src/comm/membership/shrink_agreement.h"

#include <string>
#include <vector>

namespace tutti {

namespace {

// Below the bootstrap's own (-1, its allgather); connection ids are >= 0.
constexpr int kShrinkTagBase = -1000;

// What the leader sends each survivor: the rendezvous, and a digest of the
// list it excluded so that a survivor with another list notices.
struct ShrinkOffer {
  BootstrapHandle handle;
  uint64_t excludedDigest;
  int32_t excludedCount;
  int32_t ok;  // 0: the leader could not start the rendezvous
};

uint64_t digestOf(const std::set<int>& ranks) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the ranks in order
  for (int r : ranks) {
    h ^= static_cast<uint64_t>(static_cast<uint32_t>(r));
    h *= 1099511628211ull;
  }
  return h;
}

std::string listOf(const std::set<int>& ranks) {
  std::string s = "{";
  for (int r : ranks) s += (s.size() > 1 ? ", " : "") + std::to_string(r);
  return s + "}";
}

}  // namespace

Result<NewMembership> agreeOnSurvivors(Exchange& parent, const std::set<int>& excluded, int round,
                                       const std::function<Result<BootstrapHandle>()>& makeRendezvous) {
  const int me = parent.rank();
  std::vector<int> survivors;
  for (int r = 0; r < parent.size(); ++r)
    if (!excluded.count(r)) survivors.push_back(r);
  if (excluded.count(me))
    return InvalidUsage("rank " + std::to_string(me) + " is among the excluded ranks " + listOf(excluded) +
                        ": only the ranks that stay call tuttiCommShrink");
  NewMembership place;
  place.nranks = static_cast<int>(survivors.size());
  for (int i = 0; i < place.nranks; ++i)
    if (survivors[i] == me) place.rank = i;
  const int leader = survivors.front();
  const int tag = kShrinkTagBase - round;
  const uint64_t digest = digestOf(excluded);
  ShrinkOffer offer{};
  if (me == leader) {
    auto made = makeRendezvous();
    offer.ok = made.ok() ? 1 : 0;
    if (made.ok()) offer.handle = made.value();
    offer.excludedDigest = digest;
    offer.excludedCount = static_cast<int32_t>(excluded.size());
    // Every survivor hears from the leader, even of its failure, so none waits out its timeout.
    for (size_t i = 1; i < survivors.size(); ++i)
      TUTTI_RETURN_IF_ERROR(parent.send(survivors[i], tag, &offer, sizeof(offer)));
    if (!made.ok()) return made.status();
  } else {
    Status got = parent.recv(leader, tag, &offer, sizeof(offer));
    if (!got.ok())
      return Status(got.code(), "waiting for rank " + std::to_string(leader) +
                                    ", the lowest rank not excluded, to start the shrunk communicator: " +
                                    got.message());
    if (!offer.ok)
      return SystemError("rank " + std::to_string(leader) +
                         ", the lowest rank not excluded, could not start the shrunk communicator's rendezvous");
    if (offer.excludedDigest != digest || offer.excludedCount != static_cast<int32_t>(excluded.size()))
      return InvalidUsage("rank " + std::to_string(me) + " excludes " + listOf(excluded) + " but rank " +
                          std::to_string(leader) + " (the leader) excludes another list of " +
                          std::to_string(offer.excludedCount) + " rank(s): every survivor must exclude the same");
  }
  place.handle = offer.handle;
  return place;
}

}  // namespace tutti
