// A socket that only receives sends no data its ACKs could ride on, so the
// kernel answers each small chunk read with a packet of its own; on a busy
// node each costs both ends a wake-up. The receiving end
// keeps the kernel's delayed ACKs (Socket::delayAcks), so small chunks read
// one by one are answered at most every other one.
#include <gtest/gtest.h>
#include <linux/tcp.h>  // struct tcp_info with tcpi_segs_out (glibc's lacks it)
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "src/common/interfaces.h"
#include "transport/socket/transport.h"

namespace tutti {
namespace {

// Segments the socket has sent: its handshake's last, ACKs, window updates.
uint32_t segmentsSent(int fd) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  EXPECT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len), 0) << std::strerror(errno);
  return info.tcpi_segs_out;
}

TEST(SocketAcks, ReceiverDoesNotAckEverySmallChunk) {
  auto lo = selectInterfaces(listInterfaces(), "lo", AF_INET);
  ASSERT_TRUE(lo.ok());
  auto senderSide = SocketTransport::create({lo->front()}, SocketStreams{});
  auto receiverSide = SocketTransport::create({lo->front()}, SocketStreams{});
  ASSERT_TRUE(senderSide.ok() && receiverSide.ok());
  RankInfo info[2];
  for (int r = 0; r < 2; ++r) {
    info[r].rank = r;
    info[r].nranks = 2;
    info[r].pid = getpid();
    info[r].hostHash = 42;
    std::strcpy(info[r].hostname, "here");
  }
  ConnectionSpec recvSpec{&info[1], &info[0], 0xac4ull + getpid(), 1, 4096, 4, 10, nullptr};
  ConnectionSpec sendSpec = recvSpec;
  sendSpec.self = &info[0];
  sendSpec.peer = &info[1];
  ConnectionHandle handle;
  auto recv = (*receiverSide)->listen(recvSpec, &handle);
  ASSERT_TRUE(recv.ok()) << recv.status().message();
  auto send = (*senderSide)->connect(sendSpec, handle);
  ASSERT_TRUE(send.ok()) << send.status().message();
  ASSERT_TRUE((*receiverSide)->accept(recvSpec, **recv).ok());
  const int fd = (*recv)->pollFd();
  ASSERT_GE(fd, 0) << "one stream, no helper threads: the receiver's socket";

  // Each chunk has reached the receiver's socket before it is read, as a
  // peer's message does during a call.
  const uint32_t before = segmentsSent(fd);
  constexpr int kChunks = 200;
  for (int i = 0; i < kChunks; ++i) {
    size_t cap = 0;
    void* slot = (*send)->acquire(&cap);
    ASSERT_NE(slot, nullptr);
    std::memcpy(slot, &i, sizeof(i));
    ASSERT_TRUE((*send)->post(sizeof(i)).ok());
    while (!(*send)->flushed()) ASSERT_TRUE((*send)->progress().ok());
    size_t bytes = 0;
    const void* got = nullptr;
    while (!(got = (*recv)->peek(&bytes))) ASSERT_TRUE((*recv)->progress().ok());
    int value = -1;
    std::memcpy(&value, got, sizeof(value));
    ASSERT_EQ(value, i);
    ASSERT_TRUE((*recv)->release().ok());
  }
  const uint32_t acks = segmentsSent(fd) - before;
  // Every other chunk at most, with room for delayed-ACK timers a loaded
  // machine lets fire between chunks (each puts back a quick ACK or two).
  EXPECT_LT(acks, kChunks * 3 / 4) << "the receiver sent " << acks << " segments for " << kChunks << " chunks";
}

}  // namespace
}  // namespace tutti
