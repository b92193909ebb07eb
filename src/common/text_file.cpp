#include "src/common/text_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace tutti {

std::string readTextFile(const std::string& path, bool* ok) {
  std::string text;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  bool whole = fd >= 0;
  if (fd >= 0) {
    char buf[4096];
    for (;;) {
      const ssize_t got = read(fd, buf, sizeof(buf));
      if (got > 0) {
        text.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        whole = got == 0;
        break;
      }
    }
    close(fd);
  }
  if (ok) *ok = whole;
  return whole ? text : std::string();
}

std::string readFirstLine(const std::string& path) {
  std::string text = readTextFile(path);
  const size_t end = text.find('\n');
  if (end != std::string::npos) text.resize(end);
  return text;
}

bool writeTextFile(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t put = write(fd, text.data() + done, text.size() - done);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) break;
    done += static_cast<size_t>(put);
  }
  return close(fd) == 0 && done == text.size();
}

bool replaceTextFile(const std::string& path, const std::string& text) {
  const std::string partial = path + "." + std::to_string(getpid());
  if (writeTextFile(partial, text) && rename(partial.c_str(), path.c_str()) == 0) return true;
  unlink(partial.c_str());
  return false;
}

}  // namespace tutti
