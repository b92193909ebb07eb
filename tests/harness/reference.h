// Test inputs and the results tutti must produce, computed here without any
// of tutti's code: integers in 64-bit arithmetic masked to the type's width
// (so sums and products wrap), floats in double and rounded by the compiler's
// own _Float16 or a local bfloat16 rounding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tutti/tutti.h"

namespace tutti_test {

size_t elemSize(tuttiDataType_t t);
const char* typeLabel(tuttiDataType_t t);
const char* opLabel(tuttiRedOp_t op);

// Rank `rank`'s input element `index` (the index as the collective numbers it).
void fillInput(void* buf, size_t count, tuttiDataType_t t, tuttiRedOp_t op, int rank,
               size_t firstIndex, uint64_t seed);

// Element `index` reduced over ranks 0..nranks-1 with op, written to out[0..count).
void fillReduced(void* out, size_t count, tuttiDataType_t t, tuttiRedOp_t op, int nranks,
                 size_t firstIndex, uint64_t seed);

// Bytewise comparison per element; returns the number of mismatches and
// describes the first few in *report.
size_t compareElements(const void* got, const void* want, size_t count, tuttiDataType_t t,
                       std::string* report, size_t reportOffset = 0);

}  // namespace tutti_test
