// The first line of a small text file (sysfs attributes), or "" when it cannot be read.
#pragma once

#include <fstream>
#include <string>

namespace tutti {

inline std::string readFirstLine(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

}  // namespace tutti
