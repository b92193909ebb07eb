// Reads tunables from the environment: TUTTI_<name>, else NCCL_<name>, else the
// table's default. Unknown names are a programming error (asserted).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/common/status.h"

namespace tutti {

struct TunableInfo {
  const char* name;
  const char* defaultValue;
  const char* meaning;
};

// Every tunable, in table order.
const std::vector<TunableInfo>& allTunables();

// The value in effect and where it came from ("TUTTI_X", "NCCL_X" or "default").
std::string tunableString(const char* name, std::string* source = nullptr);
// Parses an integer tunable; a malformed value is an InvalidArgument naming the variable.
Result<int64_t> tunableInt(const char* name);

// Parses a decimal integer; false when text is not one.
bool parseInt64(const std::string& text, int64_t* out);

}  // namespace tutti
