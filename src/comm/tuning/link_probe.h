// What the links of a communicator of several nodes cost, measured at init
// with every rank busy, as in a collective: in one round each rank passes a
// message to the next rank of its node (shared memory), in another to the
// rank of its place on the next node (the network), all ranks at once, so
// the figures include what ranks sharing cores pay to wake each other. The
// cost model then prices a veth, a 1 Gbit/s link and a host's shared memory
// as they behave, instead of by typical values and the NIC's stated speed.
// Every rank gets the same figures (the slowest rank's), so every rank's
// model makes the same choices.
#pragma once

#include "src/common/status.h"
#include "src/plan/layout.h"
#include "src/plan/tuner.h"

namespace tutti {

class Communicator;

struct MeasuredLink {
  bool measured = false;
  double latencyUs = 0;  // one message's trip, wake-up included
  double gbs = 0;        // what one rank's stream moves (GB/s) while all move
  int streams = 1;       // streams that shared a node's link in the measurement
};

struct MeasuredLinks {
  MeasuredLink intra;  // ranks of one node
  MeasuredLink net;    // ranks of different nodes
};

// One round of the measurement, for one rank (pure rank arithmetic): whom
// it passes to and takes from (-1: it sits the round out), and how many of
// its node's ranks pass on at once. Inside a node: the next rank of the
// node. Across: the rank of the same place on the next node when every node
// has as many ranks; else only the nodes' first ranks.
struct LinkRound {
  int next = -1, prev = -1;
  int streams = 1;
};
LinkRound intraRound(const NodeLayout& layout, int rank);
LinkRound netRound(const NodeLayout& layout, int rank);

// Collective: every rank of the communicator calls it after init's
// connections are made. Skipped (nothing measured) on one node.
Result<MeasuredLinks> measureLinks(Communicator& comm);

// Times all-reduces of each algorithm the model may choose here (8 bytes,
// and a size where its bandwidth shows), against the model with `tuning`'s
// measured links: TuneContext::allReduce, the same on every rank. Runs
// every rank's planner restricted to one algorithm at a time, then puts
// `tuning` back with the calibration in.
Status calibrateAllReduce(Communicator& comm, TuneContext* tuning);
// How many calls init times at a size (TuneContext::Calibration::calls).
int calibrationCalls(double bytes);

// The cost model's link costs with the measured figures in place of the
// typical ones (what was not measured keeps its typical value).
void applyMeasuredLinks(const MeasuredLinks& links, TuneContext* tuning);

}  // namespace tutti
