#include "src/exec/verdicts.h"

#include <time.h>

#include <cstdio>

#include "src/common/clock.h"

namespace tutti {

Status timedOutVerdict(Peers* peers, int rank, double timeoutSeconds, const std::string& where, int* culprit) {
  char event[96];
  snprintf(event, sizeof(event), "timed out on rank %d after %g s", rank, timeoutSeconds);
  HangReport why = peers->explainHang(event, peers->reportedFailure(0));
  *culprit = why.culprit;
  const std::string limit = "timed out after " + std::to_string(timeoutSeconds) + " s (TUTTI_TIMEOUT)";
  if (why.culprit < 0) return TimeoutError(why.text.empty() ? limit : limit + "; " + why.text);
  peers->blame(why);
  return TimeoutError(why.text + " (TUTTI_TIMEOUT); here, " + where);
}

Status givenUpVerdict(Peers* peers, int rank, const HangReport& verdict, int by, double waitedSeconds,
                      const std::string& where) {
  const int culprit = verdict.culprit;
  peers->notifyFailure(culprit);
  if (verdict.mismatch)  // the finder's words: the ranks it compared may have left since
    return InvalidUsage(verdict.text + ", as rank " + std::to_string(by) + " found; here, " + where);
  char event[128];
  snprintf(event, sizeof(event), "was given up on rank %d after %.1f s, when rank %d timed out", rank,
           waitedSeconds, by);
  HangReport why = peers->explainHang(event, culprit);
  if (why.text.empty())
    why.text = std::string("rank ") + std::to_string(by) + " gave up and blames rank " + std::to_string(culprit);
  // The call could not complete in time anywhere: a timeout here too
  // (what callers and PyTorch's watchdog look for).
  return Status(why.mismatch ? Code::kInvalidUsage : Code::kTimeout, why.text + "; here, " + where);
}

HangReport awaitVerdict(Peers* peers, int* by) {
  constexpr double kVerdictGraceSeconds = 0.05;
  Deadline grace = Deadline::after(kVerdictGraceSeconds);
  for (;;) {
    HangReport v = peers->verdictOfPeer(by);
    if (v.culprit >= 0 || grace.expired()) return v;
    timespec ts{0, 1000000};
    nanosleep(&ts, nullptr);
  }
}

Status checkSameCallNumber(Peers* peers, const std::string& event, const std::string& where) {
  HangReport why = peers->explainHang(event, -1);
  if (!why.mismatch) return Status::Ok();
  peers->blame(why);
  return InvalidUsage(why.text + "; here, " + where);
}

}  // namespace tutti
