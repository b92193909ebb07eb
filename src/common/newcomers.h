// Connections just accepted on a listener that have not yet said who they
// are: each must send a fixed-size greeting (its first message) within a
// short deadline. Greetings are read without blocking, side by side, so an
// idle, slow or hostile stranger on an open port delays nobody; one that
// stays silent, hangs up or floods the port is dropped with a WARN naming
// its address.
#pragma once

#include <poll.h>

#include <deque>
#include <string>
#include <vector>

#include "src/common/clock.h"
#include "src/common/socket.h"

namespace tutti {

class Newcomers {
 public:
  struct Greeted {
    Socket socket;
    std::vector<char> greeting;  // exactly the greeting's size
  };

  // `where` names the listener in warnings ("root 10.0.0.1:4000").
  Newcomers(size_t greetingBytes, std::string where, double patienceSeconds = 5);

  // Waits (at most `timeoutMs`) until the listener, a newcomer or one of
  // `others` has something to read; `others`' revents are filled in.
  void wait(const Socket& listener, std::vector<pollfd>* others, int timeoutMs);
  // Accepts every connection waiting on the listener; never blocks.
  void acceptAll(Socket& listener);
  // Reads what has arrived; returns the newcomers whose greeting is now
  // complete, and drops the ones past their deadline or closed.
  std::vector<Greeted> progress();
  // For the caller's own refusals of a greeting it read.
  void drop(const Socket& socket, const std::string& why) const;
  size_t pending() const { return pending_.size(); }

 private:
  struct Pending {
    Socket socket;
    std::vector<char> bytes;
    size_t got = 0;
    Deadline deadline = Deadline::after(0);
  };
  // More strangers than this at once: the oldest is dropped for the newest.
  static constexpr size_t kMaxPending = 256;

  size_t greetingBytes_;
  std::string where_;
  double patienceSeconds_;
  std::deque<Pending> pending_;
};

}  // namespace tutti
