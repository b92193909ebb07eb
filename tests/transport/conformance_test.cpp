// One conformance suite for every transport: two ends in this process, a
// stream of chunks of awkward sizes checked byte for byte and in order,
// flow control, sending by reference, and the failure notice. The "_device"
// variants (and p2p) carry device calls on the emulated device: the ends
// are stream-ordered, chunks are written and read by the device's copies,
// and slots go back to the transport only once the device is past them.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "src/common/doorbell.h"
#include "src/common/interfaces.h"
#include "src/common/wake_word.h"
#include "src/device/emulated_device.h"
#include "transport/p2p/transport.h"
#include "transport/shm/transport.h"
#include "transport/stream_ordered.h"
#include "transport/socket/transport.h"
#ifdef TUTTI_HAVE_UCX
#include "transport/ucx/transport.h"
#endif
#ifdef TUTTI_HAVE_IBVERBS
#include "transport/ibverbs/transport.h"
#endif

namespace tutti {
namespace {

struct Pair {
  std::unique_ptr<Transport> senderSide, receiverSide;
  std::unique_ptr<SendConnection> send;
  std::unique_ptr<RecvConnection> recv;
};

constexpr size_t kSlot = 64 << 10;
constexpr int kSlots = 4;

// "ucx_tcp", "ucx_sm": UCX limited to one fabric through UCX_TLS (read when
// the worker is made), on loopback only.
#ifdef TUTTI_HAVE_UCX
std::unique_ptr<UcxTransport> makeUcx(const std::string& name) {
  setenv("UCX_TLS", name == "ucx_tcp" ? "tcp" : "sm,self", 1);
  setenv("UCX_NET_DEVICES", "lo", 1);
  auto t = UcxTransport::createUnconnected(kSlot);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(t.value()) : nullptr;
}
#endif

// The emulated device the device variants run on, and tutti's stream on it.
EmulatedDevice& testDevice() {
  static EmulatedDevice* device = new EmulatedDevice(1);
  return *device;
}
DeviceStream testStream() {
  static DeviceStream stream = *testDevice().createStream();
  return stream;
}

// The slots' marks: these tests copy chunks themselves, so nothing is
// queued and every slot is free as soon as it is posted or released.
OpQueue& testQueue() {
  static std::unique_ptr<OpQueue> queue = std::move(*OpQueue::create(testDevice(), testStream(), nullptr));
  return *queue;
}

bool onDevice(const std::string& name) {
  return name == "p2p" || (name.size() > 7 && name.compare(name.size() - 7, 7, "_device") == 0);
}
std::string baseName(const std::string& name) {
  return onDevice(name) && name != "p2p" ? name.substr(0, name.size() - 7) : name;
}

std::unique_ptr<Transport> makeTransport(const std::string& name) {
  if (name == "shm") return std::make_unique<ShmTransport>();
  if (name == "p2p")
    return std::make_unique<P2pTransport>(testDevice(), 0, std::vector<std::string>{"0000:10:00.0", "0000:10:00.0"});
  auto lo = selectInterfaces(listInterfaces(), "lo", AF_INET);
  EXPECT_TRUE(lo.ok());
  // "socket_4x2": 4 sockets per thread, 2 helper threads; "socket_3x0": 3
  // sockets driven inline.
  SocketStreams streams;
  if (name.size() > 7) {
    streams.socketsPerThread = name[7] - '0';
    streams.threads = name[9] - '0';
  }
  auto t = SocketTransport::create({lo->front()}, streams);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t.value());
}

// Both ends' transports; UCX's swap worker addresses as a bootstrap would.
std::pair<std::unique_ptr<Transport>, std::unique_ptr<Transport>> makeTransports(const std::string& full) {
  const std::string name = baseName(full);
#ifdef TUTTI_HAVE_UCX
  if (name.rfind("ucx", 0) == 0) {
    auto sender = makeUcx(name), receiver = makeUcx(name);
    if (!sender || !receiver) return {};
    std::vector<std::string> addresses = {sender->workerAddress(), receiver->workerAddress()};
    sender->setPeerAddresses(addresses);
    receiver->setPeerAddresses(addresses);
    return {std::move(sender), std::move(receiver)};
  }
#endif
#ifdef TUTTI_HAVE_IBVERBS
  if (name == "ib") {
    auto lo = selectInterfaces(listInterfaces(), "lo", AF_INET);
    auto sender = IbTransport::create(lo.value()), receiver = IbTransport::create(lo.value());
    EXPECT_TRUE(sender.ok() && receiver.ok()) << sender.status().message();
    if (!sender.ok() || !receiver.ok()) return {};
    return {std::move(sender.value()), std::move(receiver.value())};
  }
#endif
  return {makeTransport(name), makeTransport(name)};
}

std::vector<std::string> transportsUnderTest() {
  std::vector<std::string> names = {"shm", "socket", "socket_3x0", "socket_2x2",
                                    "p2p", "shm_device", "socket_device", "socket_2x2_device"};
#ifdef TUTTI_HAVE_UCX
  names.push_back("ucx_tcp");
  names.push_back("ucx_sm");
  names.push_back("ucx_tcp_device");
#endif
#ifdef TUTTI_HAVE_IBVERBS
  names.push_back("ib");  // skips without an RDMA device
#endif
  return names;
}

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
#ifdef TUTTI_HAVE_IBVERBS
    std::string detail;
    if (GetParam() == "ib") {
      Status usable = IbTransport::probe(&detail);
      if (!usable.ok()) GTEST_SKIP() << "verbs transport unavailable: " << usable.message();
    }
#endif
    for (int r = 0; r < 2; ++r) {
      info_[r].rank = r;
      info_[r].nranks = 2;
      info_[r].pid = getpid();
      info_[r].hostHash = 42;
      std::strcpy(info_[r].hostname, "here");
    }
    std::tie(p_.senderSide, p_.receiverSide) = makeTransports(GetParam());
    ASSERT_TRUE(p_.senderSide && p_.receiverSide);
    static uint32_t id = 0;
    ConnectionSpec recvSpec{&info_[1], &info_[0], magic_, ++id, kSlot, kSlots, 10, nullptr};
    device_ = onDevice(GetParam());
    if (device_) {
      setDeviceRuntime(&testDevice());
      recvSpec.memory = Memory::kDevice;
      recvSpec.device = 0;
    }
    ConnectionSpec sendSpec = recvSpec;
    sendSpec.self = &info_[0];
    sendSpec.peer = &info_[1];
    ASSERT_TRUE(p_.receiverSide->canConnect(info_[1], info_[0], recvSpec.memory));
    ConnectionHandle handle;
    auto r = p_.receiverSide->listen(recvSpec, &handle);
    ASSERT_TRUE(r.ok()) << r.status().message();
    p_.recv = std::move(r.value());
    auto s = p_.senderSide->connect(sendSpec, handle);
    ASSERT_TRUE(s.ok()) << s.status().message();
    p_.send = std::move(s.value());
    Status st = p_.receiverSide->accept(recvSpec, *p_.recv);
    ASSERT_TRUE(st.ok()) << st.message();
    if (device_) {  // as the communicator's connector does for device calls
      auto sendSlots = DeviceSlots::map(testDevice(), testQueue(), p_.send->slots(), kSlots);
      auto recvSlots = DeviceSlots::map(testDevice(), testQueue(), p_.recv->slots(), kSlots);
      ASSERT_TRUE(sendSlots.ok() && recvSlots.ok()) << sendSlots.status().message();
      p_.send = std::make_unique<StreamOrderedSend>(std::move(p_.send), std::move(*sendSlots));
      p_.recv = std::make_unique<StreamOrderedRecv>(std::move(p_.recv), std::move(*recvSlots));
    }
  }

  void TearDown() override {
    if (device_) {
      ASSERT_TRUE(testDevice().synchronize(testStream()).ok());
    }
    p_.send.reset();
    p_.recv.reset();
    setDeviceRuntime(nullptr);
  }

  // Writes a chunk into a slot (a device copy on tutti's stream for device
  // connections, as the executor's kernels would), or reads one back.
  void write(void* slot, const std::vector<char>& data) {
    if (!device_) {
      std::memcpy(slot, data.data(), data.size());
      return;
    }
    const size_t n = data.size();
    ASSERT_TRUE(testDevice().copyAsync(slot, data.data(), n, testStream()).ok());
    ASSERT_TRUE(testDevice().synchronize(testStream()).ok());
  }
  std::vector<char> read(const void* slot, size_t bytes) {
    std::vector<char> out(bytes);
    if (!device_) {
      std::memcpy(out.data(), slot, bytes);
      return out;
    }
    EXPECT_TRUE(testDevice().copyAsync(out.data(), slot, bytes, testStream()).ok());
    EXPECT_TRUE(testDevice().synchronize(testStream()).ok());
    return out;
  }

  // Posts `bytes` of pattern `seed` (by reference every third chunk when the
  // transport can, every other of those with its last 8 bytes as the tag
  // where it sends tags); false while no slot is free.
  bool trySend(size_t bytes, uint32_t seed, std::vector<std::vector<char>>* keep) {
    size_t cap = 0;
    void* slot = p_.send->acquire(&cap);
    if (!slot) return false;
    EXPECT_GE(cap, bytes);
    std::vector<char> data(bytes);
    for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>((seed * 131 + i * 7) & 0xff);
    if (p_.send->sendsByReference() && seed % 3 == 0) {
      keep->push_back(std::move(data));  // must outlive the send
      uint64_t tag = 0;
      if (p_.send->sendsTaggedByReference() && seed % 2 == 1 && bytes >= sizeof(tag)) {
        std::memcpy(&tag, keep->back().data() + bytes - sizeof(tag), sizeof(tag));
        EXPECT_TRUE(p_.send->postTaggedReference(keep->back().data(), bytes - sizeof(tag), tag).ok());
      } else {
        EXPECT_TRUE(p_.send->postReference(keep->back().data(), bytes).ok());
      }
    } else {
      write(slot, data);
      EXPECT_TRUE(p_.send->post(bytes).ok());
    }
    return true;
  }

  bool tryReceive(size_t bytes, uint32_t seed) {
    EXPECT_TRUE(p_.recv->progress().ok());
    size_t got = 0;
    const void* data = p_.recv->peek(&got);
    if (!data) return false;
    EXPECT_EQ(got, bytes) << "chunk " << seed;
    const std::vector<char> copy = read(data, bytes);
    const char* c = copy.data();
    for (size_t i = 0; i < bytes; ++i)
      if (c[i] != static_cast<char>((seed * 131 + i * 7) & 0xff)) {
        ADD_FAILURE() << "chunk " << seed << " byte " << i << " differs";
        break;
      }
    EXPECT_TRUE(p_.recv->release().ok());
    return true;
  }

  // Sends one 100-byte chunk (pattern 1) until it has left the sender. UCX
  // completes a send only once the receiving worker has answered the
  // endpoint's wire-up, so the receiver makes progress too (without reading).
  void sendOneChunk(std::vector<std::vector<char>>* keep) {
    ASSERT_TRUE(trySend(100, 1, keep));
    while (!p_.send->flushed()) {
      ASSERT_TRUE(p_.send->progress().ok());
      ASSERT_TRUE(p_.recv->progress().ok());
    }
  }

  // Sends chunks of `sizes` (each round one, or as many as slots allow:
  // `burst`) and receives one every `receiveEvery` rounds, until all arrived.
  void sendAndReceive(const std::vector<size_t>& sizes, bool burst, int receiveEvery) {
    std::vector<std::vector<char>> keep;
    size_t sent = 0, received = 0;
    int round = 0, idle = 0;
    while (received < sizes.size()) {
      bool moved = false;
      while (sent < sizes.size() && trySend(sizes[sent], static_cast<uint32_t>(sent), &keep)) {
        ++sent;
        moved = true;
        if (!burst) break;
      }
      ASSERT_TRUE(p_.send->progress().ok());
      if (++round % receiveEvery == 0 && received < sent &&
          tryReceive(sizes[received], static_cast<uint32_t>(received))) {
        ++received;
        moved = true;
      }
      idle = moved ? 0 : idle + 1;
      ASSERT_LT(idle, 10000000) << "no progress after " << received << " chunks";
    }
    while (!p_.send->flushed()) ASSERT_TRUE(p_.send->progress().ok());
  }

  // Runs `move` (a send or a receive that must succeed) 100 ms from now, on
  // a thread of its own: a peer that moves while this end waits.
  static std::thread inAWhile(std::function<bool()> move) {
    return std::thread([move] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      EXPECT_TRUE(move());
    });
  }

  RankInfo info_[2];
  Pair p_;
  const uint64_t magic_ = 0x7e57ull + getpid();  // the communicator the ends belong to
  bool device_ = false;
};

TEST_P(Conformance, ChunksArriveInOrderAndIntact) {
  std::mt19937 rng(11);
  std::vector<size_t> sizes = {1, 7, kSlot, kSlot - 1, 4096, 3};
  for (int i = 0; i < 300; ++i) sizes.push_back(1 + rng() % kSlot);
  ASSERT_NO_FATAL_FAILURE(sendAndReceive(sizes, false, 1));
  EXPECT_TRUE(p_.send->checkPeer().ok());
  EXPECT_TRUE(p_.recv->checkPeer().ok());
}

// Small chunks sent faster than they are read: several wait in one socket
// (a receiver reading ahead takes more than one at once) while the
// receiver's slots are full.
TEST_P(Conformance, SmallChunksQueuedBehindFullSlots) {
  std::mt19937 rng(5);
  std::vector<size_t> sizes;
  for (int i = 0; i < 400; ++i) sizes.push_back(1 + rng() % (i % 50 == 49 ? kSlot : 300));
  ASSERT_NO_FATAL_FAILURE(sendAndReceive(sizes, true, 8));
}

TEST_P(Conformance, HoldsAllSlotsWithoutAReader) {
  std::vector<std::vector<char>> keep;
  for (int i = 0; i < kSlots; ++i) ASSERT_TRUE(trySend(kSlot, 1 + i, &keep)) << "slot " << i;
  for (int i = 0; i < kSlots;)
    if (tryReceive(kSlot, 1 + i)) ++i;
    else ASSERT_TRUE(p_.send->progress().ok());
}

TEST_P(Conformance, FailureNoticeNamesTheFailedRank) {
  std::vector<std::vector<char>> keep;
  ASSERT_NO_FATAL_FAILURE(sendOneChunk(&keep));
  p_.send->notifyFailure(5);
  // The data sent before the notice still arrives (the receiver may already
  // have read the notice behind it); then the notice is reported.
  size_t got = 0;
  const void* data = nullptr;
  // Bounded by time, not polls: helper threads may take a while to get a core.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!data && std::chrono::steady_clock::now() < deadline) {
    (void)p_.recv->progress();
    data = p_.recv->peek(&got);
  }
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(got, 100u);
  EXPECT_EQ(read(data, 100)[99], static_cast<char>((131 + 99 * 7) & 0xff));
  ASSERT_TRUE(p_.recv->release().ok());
  Status st;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (st.ok() && std::chrono::steady_clock::now() < deadline) {
    st = p_.recv->progress();
    if (st.ok()) st = p_.recv->checkPeer();
  }
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kRemoteError);
  EXPECT_NE(st.message().find("rank 5 failed"), std::string::npos) << st.message();
  EXPECT_EQ(p_.recv->reportedFailure(), 5);
}

// The other way: the receiver gives up, and the sender, which may never
// read its end of the connection, learns whom it gave up on (without this, a
// survivor's broken pipe got blamed for a rank that died elsewhere).
TEST_P(Conformance, ReceiversFailureNoticeReachesTheSender) {
  std::vector<std::vector<char>> keep;
  ASSERT_NO_FATAL_FAILURE(sendOneChunk(&keep));
  p_.recv->notifyFailure(4);
  Status st;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (st.ok() && std::chrono::steady_clock::now() < deadline) {
    st = p_.send->progress();
    if (st.ok()) st = p_.send->checkPeer();
  }
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kRemoteError);
  EXPECT_NE(st.message().find("rank 4 failed"), std::string::npos) << st.message();
  EXPECT_EQ(p_.send->reportedFailure(), 4);
}

// An end that can sleep on its peer wakes when the peer moves, long before
// its timeout: the receiver when a chunk is posted, the sender when a slot
// is freed. And it does not sleep at all when the peer moved before it
// began: the wake-up it would have waited for has come already.
TEST_P(Conformance, SleeperWakesWhenThePeerMoves) {
  if (!p_.recv->wakeWord() || !p_.send->wakeWord()) GTEST_SKIP() << "its ends poll rather than sleep";
  constexpr int kLongUs = 10 * 1000 * 1000;
  auto sleepOnPeer = [&](auto& end) {
    WakeWord* word = end.wakeWord();
    WakeWord::sleepOnAny(&word, 1, [&] { return end.peerMoved(); }, kLongUs);
  };
  using Clock = std::chrono::steady_clock;
  auto secondsSince = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  std::vector<std::vector<char>> keep;
  size_t got = 0;
  // The receiver finds nothing, then sleeps; the chunk comes 100 ms later.
  ASSERT_EQ(p_.recv->peek(&got), nullptr);
  std::thread sender = inAWhile([&] { return trySend(100, 1, &keep); });
  Clock::time_point start = Clock::now();
  sleepOnPeer(*p_.recv);
  EXPECT_LT(secondsSince(start), 5.0) << "the receiver slept on after the chunk was posted";
  sender.join();
  ASSERT_TRUE(tryReceive(100, 1));
  // The chunk is posted between the receiver's look and its sleep.
  ASSERT_EQ(p_.recv->peek(&got), nullptr);
  ASSERT_TRUE(trySend(100, 2, &keep));
  start = Clock::now();
  sleepOnPeer(*p_.recv);
  EXPECT_LT(secondsSince(start), 1.0) << "the receiver slept although the chunk had come";
  ASSERT_TRUE(tryReceive(100, 2));
  // The sender, its slots full, sleeps until the receiver frees one.
  for (int i = 0; i < kSlots; ++i) ASSERT_TRUE(trySend(100, 3 + i, &keep));
  size_t capacity = 0;
  ASSERT_EQ(p_.send->acquire(&capacity), nullptr);
  std::thread receiver = inAWhile([&] { return tryReceive(100, 3); });
  start = Clock::now();
  sleepOnPeer(*p_.send);
  EXPECT_LT(secondsSince(start), 5.0) << "the sender slept on after a slot was freed";
  receiver.join();
  EXPECT_NE(p_.send->acquire(&capacity), nullptr);
  for (int i = 1; i < kSlots; ++i) ASSERT_TRUE(tryReceive(100, 3 + i));
}

// An end whose rank sleeps in poll() beside sockets (counted as a poller)
// is woken through its doorbell when the peer moves: the receiver (rank 1)
// when a chunk is posted, the sender (rank 0) when a slot is freed. A bell
// nobody binds marks the word unpollable, so no rank polls on it again.
TEST_P(Conformance, PollerWakesThroughItsDoorbellWhenThePeerMoves) {
  if (!p_.recv->wakeWord() || !p_.send->wakeWord()) GTEST_SKIP() << "its ends poll rather than sleep";
  auto pollOnPeer = [&](auto& end, const Doorbell& bell) {
    WakeWord* word = end.wakeWord();
    word->pollers.fetch_add(1);
    pollfd fd{bell.fd(), POLLIN, 0};
    const int ready = end.peerMoved() ? 1 : ::poll(&fd, 1, 10 * 1000);
    word->pollers.fetch_sub(1);
    bell.drain();
    return ready;
  };
  auto receiverBell = Doorbell::bind(magic_, 1);
  auto senderBell = Doorbell::bind(magic_, 0);
  ASSERT_TRUE(receiverBell.ok() && senderBell.ok()) << receiverBell.status().message();
  std::vector<std::vector<char>> keep;
  size_t got = 0;
  ASSERT_EQ(p_.recv->peek(&got), nullptr);
  std::thread sender = inAWhile([&] { return trySend(100, 1, &keep); });
  EXPECT_EQ(pollOnPeer(*p_.recv, **receiverBell), 1) << "the receiver's bell was not rung";
  sender.join();
  ASSERT_TRUE(tryReceive(100, 1));
  for (int i = 0; i < kSlots; ++i) ASSERT_TRUE(trySend(100, 2 + i, &keep));
  size_t capacity = 0;
  ASSERT_EQ(p_.send->acquire(&capacity), nullptr);
  std::thread receiver = inAWhile([&] { return tryReceive(100, 2); });
  EXPECT_EQ(pollOnPeer(*p_.send, **senderBell), 1) << "the sender's bell was not rung";
  receiver.join();
  EXPECT_TRUE(p_.send->wakeWord()->pollable());
  // Rank 1's bell gone: the next post finds it unreachable.
  receiverBell->reset();
  for (int i = 1; i < kSlots; ++i) ASSERT_TRUE(tryReceive(100, 2 + i));
  p_.recv->wakeWord()->pollers.fetch_add(1);
  ASSERT_TRUE(trySend(100, 9, &keep));
  p_.recv->wakeWord()->pollers.fetch_sub(1);
  EXPECT_FALSE(p_.recv->wakeWord()->pollable());
  ASSERT_TRUE(tryReceive(100, 9));
}

INSTANTIATE_TEST_SUITE_P(Transports, Conformance, ::testing::ValuesIn(transportsUnderTest()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tutti
