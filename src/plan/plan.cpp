#include "src/plan/plan.h"

#include <algorithm>

namespace tutti {

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "allreduce";
    case Collective::kAllGather: return "allgather";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kReduce: return "reduce";
    case Collective::kReduceScatter: return "reducescatter";
    case Collective::kSend: return "send";
    case Collective::kRecv: return "recv";
  }
  return "?";
}

const char* stepKindName(StepKind k) {
  switch (k) {
    case StepKind::kCopy: return "copy";
    case StepKind::kSend: return "send";
    case StepKind::kCopySend: return "copySend";
    case StepKind::kRecv: return "recv";
    case StepKind::kRecvCopySend: return "recvCopySend";
    case StepKind::kRecvReduceSend: return "recvReduceSend";
    case StepKind::kRecvReduceCopy: return "recvReduceCopy";
    case StepKind::kReduceCopy: return "reduceCopy";
    case StepKind::kReduceCopySend: return "reduceCopySend";
    case StepKind::kRecvReduceCopySend: return "recvReduceCopySend";
    case StepKind::kRecvAllReduceCopy: return "recvAllReduceCopy";
    case StepKind::kRecvAllReduceCopySend: return "recvAllReduceCopySend";
  }
  return "?";
}

// Headers (and the host block's small slots with them) up to 256 deep while
// the headers take at most 64 KiB (16 pages every process faults in); 64 KiB
// slots up to 16 ranks, so a 64 KiB call stays one-shot, their data 16 deep
// (each slot's first use faults a page in every process that reads it:
// deeper cost 2 us a call over the first thousands of calls), 16 MiB of
// data at most in all (32 KiB slots at 32 ranks, 4 KiB at 256).
HostBlockShape hostBlockShape(int nranks) {
  constexpr int kMinDepth = 16, kMaxDepth = 256;
  constexpr size_t kHeaderBudget = 64 << 10;
  constexpr size_t kMaxSlotBytes = 64 << 10, kMinSlotBytes = 4 << 10, kBudget = 16 << 20;
  const size_t n = static_cast<size_t>(std::max(nranks, 1));
  HostBlockShape shape{kMinDepth, kMinDepth, kMinSlotBytes};
  while (shape.depth < kMaxDepth && shape.depth * 2 * n * kHostBlockHeaderBytes <= kHeaderBudget) shape.depth *= 2;
  while (shape.slotBytes < kMaxSlotBytes && shape.slotBytes * 2 * shape.dataDepth * n <= kBudget) shape.slotBytes *= 2;
  return shape;
}

bool reducesAcrossRanks(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduce || c == Collective::kReduceScatter;
}

void addStep(std::vector<Step>* steps, StepKind kind, int recvPeer, int sendPeer, size_t in,
             size_t out, size_t count, bool final, bool fromOutput) {
  Step s;
  s.kind = kind;
  s.recvPeer = stepReceives(kind) ? recvPeer : -1;
  s.sendPeer = stepSends(kind) ? sendPeer : -1;
  s.inOffset = in;
  s.outOffset = out;
  s.count = count;
  s.final = final;
  s.fromOutput = fromOutput;
  steps->push_back(s);
}

std::string Plan::toString() const {
  std::string s = std::string(collectiveName(collective)) + " (" + algorithmName(algorithm) + ")\n";
  for (const auto& ch : channels) {
    s += "  channel " + std::to_string(ch.channel) + ":\n";
    for (const auto& st : ch.steps) {
      s += "    " + std::string(stepKindName(st.kind));
      if (st.recvPeer >= 0) s += " from " + std::to_string(st.recvPeer);
      if (st.allRanks > 0) s += " from all of " + std::to_string(st.allRanks);
      if (st.sendPeer >= 0) s += " to " + std::to_string(st.sendPeer);
      s += std::string(st.fromOutput ? " out" : " in") + "@" + std::to_string(st.inOffset) + " -> out@" + std::to_string(st.outOffset) + " n=" +
           std::to_string(st.count) + (st.final ? " final" : "") + "\n";
    }
  }
  return s;
}

}  // namespace tutti
