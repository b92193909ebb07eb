// Every algorithm is one entry of one table: its name, the collectives it
// implements, where it runs, what the cost model predicts for it, how it
// plans a call, and where init measures it. The parser of TUTTI_ALGO, the
// tuner, the planner and the link probe read the table; an algorithm is
// added by adding an entry (as NCCL's and UCC's algorithm tables are).
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/plan/plan.h"

namespace tutti {

struct PlanRequest;
struct TuneContext;

struct AlgorithmEntry {
  Algorithm id;
  const char* name;  // in TUTTI_ALGO and the logs
  uint8_t collectives;  // a bit per Collective it implements
  // It runs on the one-shot channel alone, whose connections to every rank
  // exist from init, with each chunk tagged with its call: host calls only,
  // one channel.
  bool oneShotChannel;
  // Its programs follow the node layout (PlanRequest::layout); without one
  // a call takes rings.
  bool needsLayout;
  // The predicted time of one call (src/plan/costs.h); 1e30 where it does
  // not fit the communicator. Null: not the cost model's to choose.
  double (*costUs)(const TuneContext&, Collective, size_t bytes, int nchannels, size_t chunkBytes);
  // Appends channel `channel`'s programs (plan_internal.h).
  void (*planChannel)(const PlanRequest&, int channel, Plan*, size_t* used);
  // Scratch a call needs beside its buffers (Plan::scratchBytes); null: none.
  void (*scratch)(const PlanRequest&, Plan*);
  // The all-reduce sizes the link probe times it at, after 8 bytes and a
  // cache line a rank: a middle size, and one where its bandwidth shows
  // within a few milliseconds.
  double calibrationBytes[2];

  bool implements(Collective c) const { return collectives & (1u << static_cast<int>(c)); }
};

// The entry of `a` (kOrdered's too, which only TUTTI_DETERMINISTIC picks).
const AlgorithmEntry& algorithmEntry(Algorithm a);
// Null for a name no entry has.
const AlgorithmEntry* algorithmNamed(const char* name);

// Whether `algorithm` implements `collective`.
inline bool algorithmSupports(Algorithm a, Collective c) { return algorithmEntry(a).implements(c); }
inline bool onOneShotChannel(Algorithm a) { return algorithmEntry(a).oneShotChannel; }

}  // namespace tutti
