// Strangers on tutti's open ports during init: every rank runs an attacker
// thread that finds each port its own process listens on (the rendezvous
// root, the bootstrap listener, the socket transport's) as it opens, and
// sends it forged and truncated headers, lengths of exabytes, random bytes,
// a byte at a time, and idle connections kept open through init. The genuine
// ranks must initialize within a second of an undisturbed run and compute
// correctly; before the listeners read greetings side by side and bounded
// lengths, a forged length killed the rank and idle connections stalled the
// root for seconds each.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

// The wire layouts an attacker who read the source would forge (the unique
// id starts with the job's 64-bit magic).
struct ForgedBootstrapHeader {
  uint64_t magic;
  int32_t from;
  int32_t tag;
  uint64_t bytes;
};
struct ForgedRootHello {
  uint64_t magic;
  int32_t rank, nranks, pid, reserved;
  uint64_t hostHash;
  uint8_t address[20];
  char hostname[64];
};

// Loopback ports this process listens on (its sockets' inodes in /proc/self/fd).
std::set<int> ownListeningPorts() {
  std::set<std::string> inodes;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      char target[64] = {0};
      std::string link = std::string("/proc/self/fd/") + e->d_name;
      if (readlink(link.c_str(), target, sizeof(target) - 1) > 0 && !strncmp(target, "socket:[", 8))
        inodes.insert(std::string(target + 8, strlen(target) - 9));
    }
    closedir(d);
  }
  std::set<int> ports;
  std::ifstream tcp("/proc/self/net/tcp");
  std::string line;
  std::getline(tcp, line);
  while (std::getline(tcp, line)) {
    std::istringstream in(line);
    std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
    in >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
    if (state == "0A" && inodes.count(inode))  // LISTEN
      ports.insert(std::stoi(local.substr(local.find(':') + 1), nullptr, 16));
  }
  return ports;
}

int connectTo(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

class Attacker {
 public:
  explicit Attacker(uint64_t magic) : magic_(magic), thread_([this] { run(); }) {}
  ~Attacker() {
    stop_ = true;
    thread_.join();
    for (int fd : idle_) close(fd);
  }
  int portsAttacked() const { return attacked_.load(); }

 private:
  void send(int fd, const void* p, size_t n) { (void)::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT); }
  // One of everything, at one port; idle and slow connections stay open.
  void attack(int port) {
    std::mt19937_64 rng(port);
    for (int i = 0; i < 8; ++i)  // idle: connect and say nothing
      if (int fd = connectTo(port); fd >= 0) idle_.push_back(fd);
    ForgedBootstrapHeader huge{magic_, 0, 7, 1ull << 62};  // "an exabyte follows"
    ForgedBootstrapHeader huge2{magic_, 1, -1, ~0ull};
    ForgedRootHello hello{};
    hello.magic = magic_;
    hello.rank = 7;
    hello.nranks = 1 << 30;
    std::memset(hello.hostname, 'x', sizeof(hello.hostname));  // no terminating NUL
    ForgedRootHello negative = hello;
    negative.rank = -3;
    negative.nranks = -1;
    std::vector<std::vector<char>> messages;
    auto bytesOf = [](const auto& v) {
      return std::vector<char>(reinterpret_cast<const char*>(&v), reinterpret_cast<const char*>(&v) + sizeof(v));
    };
    messages.push_back(bytesOf(huge));
    messages.push_back(bytesOf(huge2));
    messages.push_back(bytesOf(hello));
    messages.push_back(bytesOf(negative));
    std::vector<char> random(4096);
    for (char& c : random) c = static_cast<char>(rng());
    messages.push_back(random);
    for (auto m : messages) {
      if (int fd = connectTo(port); fd >= 0) {  // whole, then hang up
        send(fd, m.data(), m.size());
        close(fd);
      }
      if (int fd = connectTo(port); fd >= 0) {  // truncated, then stay silent
        send(fd, m.data(), m.size() / 2);
        idle_.push_back(fd);
      }
    }
    if (int fd = connectTo(port); fd >= 0) slow_.push_back(fd);
  }
  void run() {
    std::set<int> seen;
    while (!stop_) {
      for (int port : ownListeningPorts())
        if (seen.insert(port).second) {
          attack(port);
          ++attacked_;
        }
      for (int fd : slow_) send(fd, "\x01", 1);  // a byte at a time, forever
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (int fd : slow_) close(fd);
  }

  uint64_t magic_;
  std::atomic<bool> stop_{false};
  std::atomic<int> attacked_{0};
  std::vector<int> idle_, slow_;
  std::thread thread_;
};

constexpr int kRanks = 3;

// Inits (rank 0 first, the others 300 ms later, so that init spans the
// attack), reports its init time in ms through `failure` when `timingOnly`,
// and checks an all-reduce.
std::string initAndReduce(const RankContext& ctx, bool attacked, double* initMs) {
  std::unique_ptr<Attacker> attacker;
  uint64_t magic;
  std::memcpy(&magic, ctx.id.internal, sizeof(magic));
  if (attacked) attacker = std::make_unique<Attacker>(magic);
  if (ctx.rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto t0 = std::chrono::steady_clock::now();
  tuttiComm_t comm = nullptr;
  std::string err = initComm(ctx, &comm);
  *initMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!err.empty()) return err;
  // A rank whose init beat its attacker's next look at the ports (a fast
  // init, an attacker slowed by a sanitizer) meets the strangers now, before
  // its call: its listeners stay open, and the call must not suffer them.
  for (int waited = 0; attacked && attacker->portsAttacked() < 2 && waited < 10000; waited += 5)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::vector<int32_t> buf(100003);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<int32_t>(i * (ctx.rank + 1));
  tuttiResult_t r = tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiInt32, tuttiSum, comm, nullptr);
  if (r != tuttiSuccess) err = std::string("all-reduce: ") + tuttiGetLastError(comm);
  const int32_t factor = kRanks * (kRanks + 1) / 2;
  for (size_t i = 0; err.empty() && i < buf.size(); ++i)
    if (buf[i] != static_cast<int32_t>(i * factor))
      err = "element " + std::to_string(i) + " is " + std::to_string(buf[i]);
  tuttiCommDestroy(comm);
  if (attacked && attacker->portsAttacked() < 2)
    err += "attacked only " + std::to_string(attacker->portsAttacked()) + " ports";
  return err;
}

std::map<std::string, std::string> env(int) {
  return {{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "30"}, {"TUTTI_SHM_DISABLE", "1"}};
}

// Each rank's init time in ms, or the failures.
std::vector<double> initTimes(bool attacked, std::string* failures) {
  // Ranks report their time as "ms=<t>" when all else passed.
  auto outcomes = runRanks(kRanks, [attacked](const RankContext& ctx) -> std::string {
    double ms = 0;
    std::string err = initAndReduce(ctx, attacked, &ms);
    return err.empty() ? "ms=" + std::to_string(ms) : err;
  }, env, 120);
  std::vector<double> times;
  for (const auto& o : outcomes) {
    if (o.failure.rfind("ms=", 0) == 0) times.push_back(std::stod(o.failure.substr(3)));
    else *failures += "rank " + std::to_string(o.rank) + ": " + o.failure + "\n";
  }
  return times;
}

TEST(HostileNetwork, StrangersDuringInitDelayNoRankAndCrashNone) {
  std::string failures;
  std::vector<double> calm = initTimes(false, &failures);
  ASSERT_EQ(failures, "");
  std::vector<double> attacked = initTimes(true, &failures);
  ASSERT_EQ(failures, "");
  ASSERT_EQ(calm.size(), static_cast<size_t>(kRanks));
  ASSERT_EQ(attacked.size(), static_cast<size_t>(kRanks));
  for (int r = 0; r < kRanks; ++r) {
    std::cout << "rank " << r << ": init " << calm[r] << " ms undisturbed, " << attacked[r]
              << " ms attacked\n";
    EXPECT_LT(attacked[r], calm[r] + 1000.0) << "rank " << r;
  }
}

}  // namespace
}  // namespace tutti_test
