// A Plan is plain data: for each channel, the ordered Steps one rank performs
// for one collective. The executor interprets it; nothing here touches the
// network, so plans are built and checked in unit tests.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tutti {

enum class Collective : uint8_t {
  kAllReduce,
  kAllGather,
  kBroadcast,
  kReduce,
  kReduceScatter,
  kSend,
  kRecv,
};
const char* collectiveName(Collective c);

// What one step does with each chunk. "Recv" takes the peer's chunk, "Reduce"
// combines it with the matching input elements, "Copy" writes the output,
// "Send" passes the result on.
enum class StepKind : uint8_t {
  kCopy,                // input -> output (one rank, or a root's own part)
  kSend,                // input -> peer
  kCopySend,            // input -> output and peer
  kReduceCopy,          // output + input -> output (a rank adds its own part in turn)
  kReduceCopySend,      // output + input -> output and peer
  kRecv,                // peer -> output
  kRecvCopySend,        // peer -> output and next peer
  kRecvReduceSend,      // peer + input -> next peer
  kRecvReduceCopy,      // peer + input -> output
  kRecvReduceCopySend,  // peer + input -> output and next peer
  // Every other rank's chunk and the input, combined in rank order in one
  // pass (TUTTI_DETERMINISTIC's owners): each operand is read once and the
  // output written once, where a chain of two-operand steps reads each
  // partial sum back.
  kRecvAllReduceCopy,      // ranks' chunks + input -> output
  kRecvAllReduceCopySend,  // ranks' chunks + input -> output and next peer
};
const char* stepKindName(StepKind k);
inline bool stepReceivesFromAll(StepKind k) { return k >= StepKind::kRecvAllReduceCopy; }
inline bool stepReceives(StepKind k) { return k >= StepKind::kRecv && !stepReceivesFromAll(k); }
inline bool stepSends(StepKind k) {
  return k == StepKind::kSend || k == StepKind::kCopySend || k == StepKind::kReduceCopySend ||
         k == StepKind::kRecvCopySend || k == StepKind::kRecvReduceSend ||
         k == StepKind::kRecvReduceCopySend || k == StepKind::kRecvAllReduceCopySend;
}

struct Step {
  StepKind kind = StepKind::kCopy;
  bool final = false;   // produces the final value: apply avg's division here
  int sendPeer = -1;    // rank the step sends to, -1 for none
  int recvPeer = -1;    // rank the step receives from, -1 for none
  size_t inOffset = 0;  // elements into the input buffer
  size_t outOffset = 0; // elements into the output buffer
  size_t count = 0;     // elements
  bool fromOutput = false;  // the step's input operand is the output buffer (trees
                            // accumulate several children there, then send from it)
  int allRanks = 0;  // kRecvAll*: receives from ranks 0..allRanks-1, all but its own
};

// Calls f(peer) for each rank `step` of rank `self` receives from, in rank order.
template <class F>
void forEachRecvPeer(const Step& step, int self, F&& f) {
  if (step.recvPeer >= 0) f(step.recvPeer);
  for (int j = 0; j < step.allRanks; ++j)
    if (j != self) f(j);
}

// Between ranks of one node (shared memory), or of two; kBoth: a phase
// that talks over both kinds cuts its data to fit either.
enum class OneShotLink : uint8_t { kInsideNode, kAcrossNodes, kBoth };
constexpr int kOneShotLinkKinds = 3;

struct ChannelProgram {
  int channel = 0;  // which set of connections; kP2PChannel for send/recv
  std::vector<Step> steps;
  // How the executor walks it: phase by phase, each phase chunk-major (the
  // first chunk of each of its steps, then the second of each...), so a
  // chunk flows through a phase's steps while the next follows: chunk j of
  // a step needs only chunk j of the steps before it in the phase. Entries:
  // where each phase after the first begins; none: one phase (rings, trees).
  // The two-level all-reduce's rounds are phases: each covers another range
  // of the buffer than the one before.
  std::vector<size_t> phaseStarts;
  // While a later step of a phase waits, the phase's first step, a send of
  // data an earlier phase made, goes on with its next chunks as far as the
  // connection's slots allow: an exchange of many chunks keeps several in
  // flight instead of one at a time. Not in a phase where a later step
  // sends to the same peer (a ring's): its chunks would be overtaken.
  bool sendsAhead = false;
  // No byte a step sends is written again by this call before the peer it
  // went to has it (a later write waits on a chunk that needed it), so a
  // transport may send tagged chunks straight from the buffers
  // (SendConnection::postTaggedReference). Not so where a round sends a
  // range and adds the peer's into it (recursive doubling).
  bool sentBytesStay = false;
  // One-shot programs: the kind of link whose slots each phase's chunks
  // fill (entry i for phase i; a phase past the last entry keeps the chunk
  // of the phase before), sized by Work::oneShotSlots. Both ends of a
  // connection must cut its data alike, so every rank's plan derives these
  // from the same layout.
  std::vector<OneShotLink> phaseLinks;
  // Phases that wait on another program of the same plan (a segment of a
  // pipelined halving-doubling crosses nodes once it was reduced inside).
  struct Gate {
    size_t phase;        // this program's phase that waits
    size_t program;      // the other program: its index in Plan::channels
    size_t afterPhases;  // how many of its phases must be finished first
  };
  std::vector<Gate> gates;

  // Empty, on `channel`, every flag at its default. Plans are rebuilt in
  // place call after call (keeping the steps' memory): a flag one plan set
  // must not carry over to the next.
  void reset(int onChannel) {
    channel = onChannel;
    steps.clear();
    phaseStarts.clear();
    sendsAhead = false;
    sentBytesStay = false;
    phaseLinks.clear();
    gates.clear();
  }
};

constexpr int kP2PChannel = -1;
// One-shot calls of several hosts run on connections of their own to every
// rank, made at init with few slots, so they cost little memory and time to
// make. Halving-doubling streams large calls over them a slot at a time:
// across 4 namespace nodes, 128 KiB slots took 16-64 MiB in 0.8-0.9x the
// time of 32 KiB ones (a chunk's syscalls and wake-ups, a quarter as many).
// Inside a node (shared memory) a phase longer than a slot goes in half
// slots, 8 in flight, so a reduce follows the copy sooner: across 2 x 2
// namespace nodes 1 MiB took 0.7-0.9x the time of 128 KiB chunks 4 at a
// time; a shorter phase goes whole, as 256 KiB ran up to 1.5x longer cut
// (bench/results/one_shot_slots.md). On sockets, 64 KiB chunks took
// 16-64 MiB in 1.1-1.4x the time. Inside slots take 1 MiB a connection.
constexpr int kOneShotChannel = -2;
// A one-shot connection's slots. `slotBytes` holds a chunk's data and, when
// the call tags its chunks, the tag after it (kChunkTagBytes).
struct OneShotSlots {
  size_t slotBytes;
  int count;
  size_t chunkDataBytes;  // a phase longer than one slot is cut into chunks of this
};
// A word after a tagged chunk's data naming the call (Work::tag).
constexpr size_t kChunkTagBytes = sizeof(uint64_t);
// 128 KiB of data and a cache line (slots stay aligned: 8 bytes of room
// made 2 x 2 256 KiB take 1.3-1.5x as long), so a 256 KiB call's halves go
// whole and a cut phase sends 128 KiB a chunk. Slots of exactly 128 KiB,
// tag included, cut a 256 KiB phase into two chunks and a tail of 16 bytes;
// they ran no faster at 2-4 MiB (bench/results/one_shot_slots.md).
constexpr OneShotSlots kOneShotSlotsAcross{(128 << 10) + 64, 4, 128 << 10};
constexpr OneShotSlots kOneShotSlotsInside{(128 << 10) + 64, 8, 64 << 10};
constexpr OneShotSlots smallerOfEach(const OneShotSlots& a, const OneShotSlots& b) {
  return {std::min(a.slotBytes, b.slotBytes), std::min(a.count, b.count), std::min(a.chunkDataBytes, b.chunkDataBytes)};
}
constexpr OneShotSlots kOneShotSlotsBoth = smallerOfEach(kOneShotSlotsInside, kOneShotSlotsAcross);
static_assert(kOneShotSlotsAcross.chunkDataBytes + kChunkTagBytes <= kOneShotSlotsAcross.slotBytes &&
                  kOneShotSlotsInside.chunkDataBytes + kChunkTagBytes <= kOneShotSlotsInside.slotBytes,
              "a tagged chunk fills at most a slot");
constexpr size_t kOneShotSlotBytes = kOneShotSlotsAcross.chunkDataBytes;  // the chunk the tuner prices
constexpr OneShotSlots oneShotSlotsOf(OneShotLink k) {
  return k == OneShotLink::kInsideNode ? kOneShotSlotsInside
         : k == OneShotLink::kAcrossNodes ? kOneShotSlotsAcross
                                          : kOneShotSlotsBoth;
}
// One-shot calls of one host meet in the host block (src/comm/small_calls/host_block.h)
// instead, when their input fits one of its slots; bigger ones take rings.
// Its slots shrink as ranks grow, so the block stays within a budget of
// shared memory; past kHostBlockMaxRanks small calls take rings.
constexpr int kHostBlockMaxRanks = 256;
// A rank's part of the block. A rank may run `depth` calls ahead of its
// slowest reader (a broadcast's root does, and with ranks outnumbering cores
// each wait for a reader costs a sleep and a wake, so deep rings pay) while
// its chunks fit a slot's header, `dataDepth` while they lie in the slots'
// data, each `slotBytes` long. Powers of two.
constexpr size_t kHostBlockHeaderBytes = 128;  // a slot's header: two lines (HostBlock::SlotHeader)
struct HostBlockShape {
  int depth;
  int dataDepth;
  size_t slotBytes;
};
HostBlockShape hostBlockShape(int nranks);

// Appends one step; peers a kind does not use are dropped.
void addStep(std::vector<Step>* steps, StepKind kind, int recvPeer, int sendPeer, size_t in,
             size_t out, size_t count, bool final = false, bool fromOutput = false);

// Each is an entry of src/plan/algorithms.h. kOrdered is not the cost
// model's to choose: TUTTI_DETERMINISTIC's reductions.
enum class Algorithm : uint8_t {
  kRing,
  kTree,
  kOneShot,
  kRecursiveDoubling,
  kTwoLevel,
  kHalvingDoubling,
  kOrdered,
};
constexpr int kNumAlgorithms = 6;  // those the cost model chooses among
// One-shot over connections sends each rank's buffer to every other: for
// this many ranks at most (on the host block, up to kHostBlockMaxRanks).
constexpr int kOneShotMaxRanks = 8;
const char* algorithmName(Algorithm a);
// All-reduce, reduce and reduce-scatter: what TUTTI_DETERMINISTIC orders.
bool reducesAcrossRanks(Collective c);

struct Plan {
  Collective collective = Collective::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  std::vector<ChannelProgram> channels;
  // What the algorithm needs of the call beyond its buffers. Scratch of
  // `scratchBytes` stands in for the output; with `finalToOutput` the final
  // steps still write the caller's output (partial sums kept off it).
  size_t scratchBytes = 0;
  bool finalToOutput = false;
  // Each chunk carries the call's signature (the one-shot channel's calls).
  bool taggedChunks = false;
  std::string toString() const;
};

}  // namespace tutti
