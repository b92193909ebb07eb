// One probe per host. hwloc's probe costs tens of milliseconds a process,
// most of a small job's init, and every process of a host would get the same
// answer: the first to come probes and leaves the graph as JSON in a
// directory (topologyCacheDir()); the others wait on a lock meanwhile and
// read it.
// The file's name holds what would change the answer: the boot, the user,
// the process's CPU binding, its visible devices and the host's network
// interfaces. A file older than kFreshSeconds is probed again.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "src/common/config.h"
#include "src/common/hash.h"
#include "src/common/json.h"
#include "src/common/text_file.h"
#include "src/topo/topology.h"

namespace tutti {

namespace {

constexpr int kFreshSeconds = 300;
// A prober that hangs or is stopped holds the lock: past this, probe alone.
constexpr int kLockSeconds = 10;

bool lockWithin(int fd, int seconds) {
  const time_t until = time(nullptr) + seconds;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (time(nullptr) >= until) return false;
    usleep(1000);
  }
  return true;
}

std::string interfaceNames() {
  std::string names;
  if (DIR* d = opendir("/sys/class/net")) {
    while (dirent* e = readdir(d)) names += std::string(e->d_name) + ",";
    closedir(d);
  }
  return names;
}

// The files of this user's other keys (interfaces come and go): those too
// old to be read again, and beyond the newest kTopologyCacheFiles - 1, so
// the directory stays small whatever configurations it meets.
void removeStale(const std::string& dir, const std::string& keep) {
  const std::string mine = "tutti-topo-" + std::to_string(getuid()) + "-";
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::pair<time_t, std::string>> others;  // mtime, path of a .json
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(mine, 0) != 0) continue;
    const std::string path = dir + "/" + name;
    if (path.rfind(keep, 0) == 0) continue;  // this key's file and lock
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || st.st_uid != getuid()) continue;
    if (time(nullptr) - st.st_mtime > 2 * kFreshSeconds) {
      unlink(path.c_str());
    } else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
      others.emplace_back(st.st_mtime, path);
    }
  }
  closedir(d);
  std::sort(others.begin(), others.end(), std::greater<>());
  for (size_t i = kTopologyCacheFiles - 1; i < others.size(); ++i) {
    unlink(others[i].second.c_str());
    unlink((others[i].second + ".lock").c_str());
  }
}

bool madeDirectory(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) return S_ISDIR(st.st_mode) && st.st_uid == getuid() && access(path.c_str(), W_OK) == 0;
  return mkdir(path.c_str(), 0700) == 0;
}

}  // namespace

std::string topologyCacheKey() {
  std::string key = readFirstLine("/proc/sys/kernel/random/boot_id") + "|" + interfaceNames() + "|";
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) key.append(reinterpret_cast<const char*>(&cpus), sizeof(cpus));
  for (const char* v : {"CUDA_VISIBLE_DEVICES", "TUTTI_EMULATE_DEVICE"})
    key += std::string("|") + (getenv(v) ? getenv(v) : "-");
  char name[64];
  snprintf(name, sizeof(name), "tutti-topo-%u-%016llx.json", static_cast<unsigned>(getuid()),
           static_cast<unsigned long long>(fnv1a64(key.data(), key.size())));
  return name;
}

std::string topologyCacheDir() {
  const std::string chosen = tunableString("CACHE_DIR");
  if (!chosen.empty() && madeDirectory(chosen)) return chosen;
  std::vector<std::string> candidates;
  if (const char* run = getenv("XDG_RUNTIME_DIR"); run && *run) candidates.push_back(std::string(run) + "/tutti");
  if (const char* cache = getenv("XDG_CACHE_HOME"); cache && *cache) {
    candidates.push_back(std::string(cache) + "/tutti");
  } else if (const char* home = getenv("HOME"); home && *home) {
    const std::string dotCache = std::string(home) + "/.cache";
    if (madeDirectory(dotCache)) candidates.push_back(dotCache + "/tutti");
  }
  candidates.push_back("/tmp/tutti-" + std::to_string(getuid()));
  for (const std::string& dir : candidates)
    if (madeDirectory(dir)) return dir;
  return "/tmp";
}

TopoGraph detectTopologyOncePerHost(const std::string& dir, std::vector<std::string>* notes) {
  const std::string path = dir + "/" + topologyCacheKey();
  const int lock = open((path + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock < 0 || !lockWithin(lock, kLockSeconds)) {
    if (lock >= 0) close(lock);
    if (notes) notes->push_back("probing alone: " + path + ".lock is unusable or was held over 10 s");
    return detectTopology(notes);
  }
  // Only a file of this user's, written lately, is trusted.
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && st.st_uid == getuid() && time(nullptr) - st.st_mtime < kFreshSeconds) {
    auto cached = readTopologyFile(path);
    if (cached.ok()) {
      close(lock);  // releases the lock
      if (notes) notes->push_back("read from " + path + ", probed by another process of this host");
      return std::move(cached.value());
    }
    if (notes) notes->push_back("probing again: " + cached.status().message());
  }
  TopoGraph graph = detectTopology(notes);
  removeStale(dir, path);
  (void)replaceTextFile(path, graph.toJson().dump(2) + "\n");  // a cache: probing again is the fallback
  close(lock);
  return graph;
}

}  // namespace tutti
