#include "src/common/status.h"

#include <cstring>

namespace tutti {

Status ErrnoError(const std::string& what, int errnum) {
  char buf[128];
  // GNU strerror_r may return a static string instead of filling buf.
  const char* text = strerror_r(errnum, buf, sizeof(buf));
  return Status(Code::kSystemError, what + ": " + text);
}

}  // namespace tutti
