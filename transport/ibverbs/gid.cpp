#include "transport/ibverbs/gid.h"

#include "src/common/text_file.h"

namespace tutti {

namespace {

// GIDs read as "0000:0000:0000:0000:0000:ffff:0a00:0001"; unset ones are all zero.
bool isUnset(const std::string& gid) { return gid.empty() || gid.find_first_not_of("0:") == std::string::npos; }
bool isIpv4Mapped(const std::string& gid) { return gid.rfind("0000:0000:0000:0000:0000:ffff:", 0) == 0; }

}  // namespace

Result<int> chooseGidIndex(const std::string& portDir, int requested) {
  constexpr int kMaxGids = 256;
  if (requested >= 0) {
    if (requested >= kMaxGids || isUnset(readFirstLine(portDir + "/gids/" + std::to_string(requested))))
      return InvalidArgument("TUTTI_IB_GID_INDEX=" + std::to_string(requested) + ": " + portDir +
                             " has no such GID");
    return requested;
  }
  int firstV2 = -1;
  for (int i = 0; i < kMaxGids; ++i) {
    std::string gid = readFirstLine(portDir + "/gids/" + std::to_string(i));
    if (isUnset(gid)) continue;
    std::string type = readFirstLine(portDir + "/gid_attrs/types/" + std::to_string(i));
    if (type.find("v2") == std::string::npos) continue;
    if (isIpv4Mapped(gid)) return i;
    if (firstV2 < 0) firstV2 = i;
  }
  return firstV2 >= 0 ? firstV2 : 0;
}

}  // namespace tutti
