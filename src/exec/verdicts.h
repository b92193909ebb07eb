// How a call that waits on other ranks gives up, in words every rank will
// agree on: a timeout asks the ranks why and blames the one holding the call
// up; a rank that hears another's verdict gives up naming the same culprit.
// The executor and the host block's small calls both wait on ranks, so both
// say it through these. `where` tells what this rank was doing
// ("allreduce #5 on rank 0, ... receiving from rank 1 (host)").
#pragma once

#include <string>

#include "src/common/status.h"
#include "src/exec/executor.h"

namespace tutti {

// TUTTI_TIMEOUT passed on `rank`: the ranks' progress names the culprit
// (every rank is told), or `culprit` is left -1 and the caller blames
// whom it waited on with the returned text.
Status timedOutVerdict(Peers* peers, int rank, double timeoutSeconds, const std::string& where, int* culprit);
// Another rank, `by`, gave `verdict`: this rank gives up too, naming it.
Status givenUpVerdict(Peers* peers, int rank, const HangReport& verdict, int by, double waitedSeconds,
                      const std::string& where);
// The verdict a peer gave, waiting a moment for one: it goes out before
// the failure notices, but to another thread of this process.
HangReport awaitVerdict(Peers* peers, int* by);
// Asks every rank what it called under this call's number: InvalidUsage
// naming both calls (every rank told) when one called another, else Ok.
Status checkSameCallNumber(Peers* peers, const std::string& event, const std::string& where);

}  // namespace tutti
