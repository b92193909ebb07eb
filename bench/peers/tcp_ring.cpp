// What the links carry when every node sends at once: rank r streams BYTES
// over one TCP connection to rank r+1 while it receives BYTES from rank r-1,
// nothing reduced and nothing copied beyond what the kernel does. A ring
// all-reduce moves 2(n-1)/n of its buffer over each link this way, so this
// rate is what a plain ring of one stream a link gives: a reference for the
// libraries' large all-reduces over these links, not a bound (a library may
// send over several sockets a link; bench/large_vs_links.sh).
//
//   tcp_ring RANK N NEXT_ADDR PORT BYTES ITERS
// Rank r listens on PORT + r and connects to NEXT_ADDR:PORT + (r+1)%N. Before
// each iteration a token goes once round the ring so the ranks start
// together. Each rank prints "rank BYTES median_seconds best_seconds".
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::perror(what.c_str());
  std::exit(1);
}

void sendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) fail("tcp_ring: send");
    p += k;
    n -= size_t(k);
  }
}

void recvAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k <= 0) fail("tcp_ring: recv");
    p += k;
    n -= size_t(k);
  }
}

int listenOn(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(uint16_t(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 1) != 0) fail("tcp_ring: listen");
  return fd;
}

int connectTo(const char* host, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  if (::inet_pton(AF_INET, host, &a.sin_addr) != 1) fail(std::string("tcp_ring: address ") + host);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {  // the next rank may not listen yet
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    ::close(fd);
    if (std::chrono::steady_clock::now() > deadline) fail("tcp_ring: connect");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: tcp_ring RANK N NEXT_ADDR PORT BYTES ITERS\n");
    return 2;
  }
  const int rank = std::atoi(argv[1]), n = std::atoi(argv[2]), port = std::atoi(argv[4]);
  const size_t bytes = std::strtoull(argv[5], nullptr, 10);
  const int iters = std::atoi(argv[6]);
  int listener = listenOn(port + rank);
  int next = connectTo(argv[3], port + (rank + 1) % n);
  int prev = ::accept(listener, nullptr, nullptr);
  if (prev < 0) fail("tcp_ring: accept");

  std::vector<char> out(bytes, char(rank)), in(bytes);
  std::vector<double> seconds;
  for (int i = 0; i < iters; ++i) {
    char token = 0;
    if (rank == 0) {
      sendAll(next, &token, 1);
      recvAll(prev, &token, 1);
    } else {
      recvAll(prev, &token, 1);
      sendAll(next, &token, 1);
    }
    const auto start = std::chrono::steady_clock::now();
    std::thread sender([&] { sendAll(next, out.data(), bytes); });
    recvAll(prev, in.data(), bytes);
    sender.join();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  std::printf("%d %zu %.6f %.6f\n", rank, bytes, seconds[seconds.size() / 2], seconds.front());
  return 0;
}
