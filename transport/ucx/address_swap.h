// How a transport that needs every rank's address (UCX's worker address)
// gets them: the communicator swaps blobs over its bootstrap.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "src/common/status.h"

namespace tutti {

// Swaps this rank's blob for every rank's (indexed by rank).
using AddressSwap = std::function<Result<std::vector<std::string>>(const std::string& mine)>;

}  // namespace tutti
