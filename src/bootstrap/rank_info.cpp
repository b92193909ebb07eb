#include "src/bootstrap/rank_info.h"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>


#include "src/common/config.h"
#include "src/common/hash.h"
#include "src/common/text_file.h"

namespace tutti {

std::string localHostName() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

uint64_t localHostHash() {
  std::string id = tunableString("HOSTID");
  if (id.empty()) {
    id = localHostName();
    const std::string bootId = readFirstLine("/proc/sys/kernel/random/boot_id");
    if (!bootId.empty()) id += "|" + bootId;
    // Each network namespace counts as a node: that is how multi-node tests
    // run on one machine, and ranks that cannot share a loopback are apart.
    struct stat st {};
    if (stat("/proc/self/ns/net", &st) == 0) id += "|" + std::to_string(st.st_ino);
  }
  return fnv1a64(id.data(), id.size());
}

uint64_t localCoresHash() {
  std::string id = readFirstLine("/proc/sys/kernel/random/boot_id");
  if (id.empty()) id = localHostName();
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) id.append(reinterpret_cast<const char*>(&cpus), sizeof(cpus));
  return fnv1a64(id.data(), id.size());
}

}  // namespace tutti
