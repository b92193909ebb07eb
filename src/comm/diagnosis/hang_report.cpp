#include "src/comm/diagnosis/hang_report.h"

#include <algorithm>

#include "kernels/dtype.h"
#include "src/common/number_ranges.h"
#include "src/plan/plan.h"

namespace tutti {

namespace {

bool rooted(int collective) {
  auto c = static_cast<Collective>(collective);
  return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kSend ||
         c == Collective::kRecv;
}

bool reduces(int collective) {
  auto c = static_cast<Collective>(collective);
  return c == Collective::kAllReduce || c == Collective::kReduce || c == Collective::kReduceScatter;
}

std::string whoIs(int rank, const HangPeer& p) {
  std::string state = "not answering";
  if (p.progress.answered) {
    auto s = static_cast<ProcessState>(p.progress.state);
    state = s == ProcessState::kStopped ? "stopped" : s == ProcessState::kGone ? "gone" : "alive";
  }
  return "rank " + std::to_string(rank) + " (host " + p.host + ", pid " + std::to_string(p.pid) + ", " + state + ")";
}

std::string lastCall(const CallRecord& r) {
  const uint64_t last = r.entered.sequence;
  if (last == 0) return "it has entered none";
  return "its last was " + apiCallName(r.entered.collective) + " #" + std::to_string(last) +
         (r.finished >= last ? "" : ", unfinished");
}

}  // namespace

bool sameCall(const CallSignature& a, const CallSignature& b) {
  if (a.collective != b.collective || a.count != b.count || a.dtype != b.dtype) return false;
  if (reduces(a.collective) && a.op != b.op) return false;
  return !rooted(a.collective) || static_cast<Collective>(a.collective) == Collective::kSend ||
         static_cast<Collective>(a.collective) == Collective::kRecv || a.root == b.root;
}

std::string apiCallName(int collective) {
  switch (static_cast<Collective>(collective)) {
    case Collective::kAllReduce: return "tuttiAllReduce";
    case Collective::kAllGather: return "tuttiAllGather";
    case Collective::kBroadcast: return "tuttiBroadcast";
    case Collective::kReduce: return "tuttiReduce";
    case Collective::kReduceScatter: return "tuttiReduceScatter";
    case Collective::kSend: return "tuttiSend";
    case Collective::kRecv: return "tuttiRecv";
  }
  return "call";
}

std::string describeCall(const CallSignature& r) {
  std::string s = apiCallName(r.collective) + "(count " + std::to_string(r.count);
  if (validDataType(r.dtype)) s += std::string(" ") + dtypeName(static_cast<DataType>(r.dtype));
  if (reduces(r.collective) && validRedOp(r.op)) s += std::string(", ") + redOpName(static_cast<RedOp>(r.op));
  if (rooted(r.collective)) {
    auto c = static_cast<Collective>(r.collective);
    s += (c == Collective::kSend ? ", to rank " : c == Collective::kRecv ? ", from rank " : ", root ") + std::to_string(r.root);
  }
  return s + ")";
}

uint64_t firstDifference(const CallRecord& a, const CallRecord& b, CallSignature* inA, CallSignature* inB) {
  uint64_t first = 0;
  for (const CallSignature& x : a.recent) {
    if (x.sequence == 0 || (first && x.sequence >= first)) continue;
    for (const CallSignature& y : b.recent)
      if (y.sequence == x.sequence && !sameCall(x, y)) {
        first = x.sequence;
        *inA = x;
        *inB = y;
      }
  }
  return first;
}

HangReport explainHang(int rank, const CallRecord& mine, const std::string& event,
                       const std::vector<HangPeer>& peers, int noticed) {
  const uint64_t seq = mine.entered.sequence;
  const std::string call = "call #" + std::to_string(seq);
  // Blame in this order: what certainly stops the call before what may.
  HangReport report;
  constexpr int kKinds = 6;
  std::vector<std::string> stopped, mismatched, absent, named, gone, silent;
  std::vector<int> culprits[kKinds];
  std::vector<int> waiting, done;
  for (size_t r = 0; r < peers.size(); ++r) {
    const HangPeer& p = peers[r];
    const int peer = static_cast<int>(r);
    const RankProgress& pr = p.progress;
    const CallRecord& rec = pr.record;
    const bool known = pr.answered && pr.hasRecord;
    const auto state = static_cast<ProcessState>(pr.state);
    std::string facts;
    // Another call under one number, this one or a recent one (a call that
    // differs may still complete: a broadcast's root sends and is done).
    CallSignature theirs, ours;
    const uint64_t differsAt = known && peer != rank ? firstDifference(rec, mine, &theirs, &ours) : 0;
    const bool differs = differsAt > 0;
    if (differs) {
      facts = "called " + describeCall(theirs) + " as call #" + std::to_string(differsAt) + " while rank " +
              std::to_string(rank) + " called " + describeCall(ours);
      if (!report.mismatch) {
        report.mismatch = true;
        report.culpritCall = theirs;
        report.ownCall = ours;
      }
    } else if (known && rec.entered.sequence < seq) facts = "has not entered " + call + " (" + lastCall(rec) + ")";
    else if (known && rec.finished < seq) facts = "is inside " + call;
    // A stopped rank holds everyone up; a gone one is more often a rank
    // that gave up before this one (the cause of a death is seen at once
    // on its connections, not at a timeout), so it comes after those that
    // never entered the call.
    if (peer != rank && pr.answered && state == ProcessState::kStopped) {
      stopped.push_back(whoIs(peer, p) + " " + (facts.empty() ? "is stopped" : facts));
      culprits[0].push_back(peer);
    } else if (differs) {
      mismatched.push_back(whoIs(peer, p) + " " + facts);
      culprits[1].push_back(peer);
    } else if (known && rec.entered.sequence < seq && state != ProcessState::kGone) {
      absent.push_back(whoIs(peer, p) + " " + facts);
      culprits[2].push_back(peer);
    } else if (peer == noticed && peer != rank) {
      named.push_back(whoIs(peer, p) + " is blamed by the ranks that gave up before this one");
      culprits[3].push_back(peer);
    } else if (peer != rank && pr.answered && state == ProcessState::kGone) {
      gone.push_back(whoIs(peer, p) + (facts.empty() ? "" : " " + facts));
      culprits[4].push_back(peer);
    } else if (!known) {
      silent.push_back(whoIs(peer, p) + (pr.answered ? " published no progress" : ""));
      culprits[5].push_back(peer);
    } else if (rec.finished >= seq) {
      done.push_back(peer);
    } else {
      waiting.push_back(peer);
    }
  }
  report.text = apiCallName(mine.entered.collective) + " #" + std::to_string(seq) + " " + event + ": ";
  int first = -1;
  std::string blame;
  for (int k = 0; k < kKinds && first < 0; ++k)
    if (!culprits[k].empty()) first = k;
  if (first < 0) {
    report.text += "every rank is inside " + call;
    return report;  // nobody to blame: the caller says what it waits on
  }
  const std::vector<std::string>* lists[kKinds] = {&stopped, &mismatched, &absent, &named, &gone, &silent};
  // Beside a certain cause (the first three kinds), ranks that left or do
  // not answer are most likely ranks that gave up on it: only counted.
  constexpr int kCertain = 3;
  const int last = first < kCertain ? kCertain : kKinds;
  size_t blamed = 0;
  for (int k = first; k < last; ++k)
    for (const std::string& s : *lists[k]) {
      blame += (blame.empty() ? "" : "; ") + s;
      ++blamed;
    }
  std::vector<int> left;
  for (int k = last; k < kKinds; ++k) left.insert(left.end(), culprits[k].begin(), culprits[k].end());
  std::sort(left.begin(), left.end());
  report.culprit = culprits[first].front();
  report.mismatch = first == 1;
  report.certain = first < kCertain;
  const RankProgress& blamed0 = peers[report.culprit].progress;
  report.culpritState = blamed0.answered ? blamed0.state : -1;
  report.text += blame;
  if (!waiting.empty()) report.text += "; " + ranksWord(waiting) + (waiting.size() == 1 ? " waits" : " wait") +
                                       (blamed == 1 ? " for it" : " for them");
  if (!done.empty()) report.text += "; " + ranksWord(done) + " finished " + call;
  if (!left.empty()) report.text += "; " + ranksWord(left) + " left or did not answer";
  return report;
}

}  // namespace tutti
