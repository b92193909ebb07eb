// Files for tests: a scratch directory, and a file's whole text.
#pragma once

#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tutti_test {

// A scratch directory removed when the test ends.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/tutti-test-XXXXXX";
    path = mkdtemp(tmpl) ? tmpl : "";
  }
  // One owner: a copy would remove the directory under the other.
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    if (!path.empty()) (void)!system(("rm -rf " + path).c_str());
  }
};

// The file's text; "" when it cannot be read.
inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace tutti_test
