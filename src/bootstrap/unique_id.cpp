#include "src/bootstrap/unique_id.h"

#include <netinet/in.h>
#include <sys/random.h>

#include <cstring>

#include "src/common/clock.h"
#include "src/common/hash.h"

namespace tutti {

WireAddress toWire(const SocketAddress& a) {
  WireAddress w;
  w.family = static_cast<uint16_t>(a.family());
  w.port = static_cast<uint16_t>(a.port());
  if (a.family() == AF_INET)
    std::memcpy(w.addr, &reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr, 4);
  else if (a.family() == AF_INET6)
    std::memcpy(w.addr, &reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr, 16);
  return w;
}

SocketAddress fromWire(const WireAddress& w) {
  SocketAddress a;
  if (w.family == AF_INET) {
    auto* s = reinterpret_cast<sockaddr_in*>(&a.storage);
    s->sin_family = AF_INET;
    std::memcpy(&s->sin_addr, w.addr, 4);
    a.length = sizeof(sockaddr_in);
  } else if (w.family == AF_INET6) {
    auto* s = reinterpret_cast<sockaddr_in6*>(&a.storage);
    s->sin6_family = AF_INET6;
    std::memcpy(&s->sin6_addr, w.addr, 16);
    a.length = sizeof(sockaddr_in6);
  }
  a.setPort(w.port);
  return a;
}

uint64_t randomMagic() {
  uint64_t m = 0;
  if (getrandom(&m, sizeof(m), 0) != sizeof(m)) m = static_cast<uint64_t>(nowNs()) * 0x9e3779b97f4a7c15ull;
  return m | 1;  // never zero: zero marks an empty id
}

BootstrapHandle handleForAddress(const SocketAddress& root, const std::string& seed) {
  BootstrapHandle h;
  h.root = toWire(root);
  std::string key = "tutti|" + seed + "|" + root.toString();
  h.magic = fnv1a64(key.data(), key.size()) | 1;
  return h;
}

}  // namespace tutti
