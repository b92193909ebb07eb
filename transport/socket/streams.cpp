#include "transport/socket/streams.h"

#include "src/common/config.h"

namespace tutti {

Result<SocketStreams> SocketStreams::fromEnv() {
  TUTTI_ASSIGN_OR_RETURN(int64_t nsocks, tunableInt("NSOCKS_PERTHREAD"));
  TUTTI_ASSIGN_OR_RETURN(int64_t nthreads, tunableInt("SOCKET_NTHREADS"));
  if (nsocks < 1 || nthreads < 0 || nsocks * (nthreads > 0 ? nthreads : 1) > kMaxSocketStreams)
    return InvalidArgument("TUTTI_NSOCKS_PERTHREAD (>= 1) times TUTTI_SOCKET_NTHREADS (>= 0) may be at most " +
                           std::to_string(kMaxSocketStreams) + " sockets per connection");
  SocketStreams s;
  s.socketsPerThread = static_cast<int>(nsocks);
  s.threads = static_cast<int>(nthreads);
  return s;
}

}  // namespace tutti
