// Lists of ranks or cores as people write them: "1, 3-5, 8".
#pragma once

#include <string>
#include <vector>

namespace tutti {

// `values` (increasing) with runs shortened to first-last, joined by `separator`.
inline std::string numberRanges(const std::vector<int>& values, const char* separator = ", ") {
  std::string s;
  for (size_t i = 0; i < values.size();) {
    size_t j = i;
    while (j + 1 < values.size() && values[j + 1] == values[j] + 1) ++j;
    if (!s.empty()) s += separator;
    s += std::to_string(values[i]);
    if (j > i) s += "-" + std::to_string(values[j]);
    i = j + 1;
  }
  return s;
}

// "rank 3" or "ranks 1, 3-5".
inline std::string ranksWord(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + numberRanges(ranks);
}

}  // namespace tutti
