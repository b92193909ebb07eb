// Log lines are written whole, however long: init's calibration line runs
// past 2 KiB once every algorithm has kept sizes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "src/common/log.h"

namespace tutti {
namespace {

TEST(Log, ALongLineIsWrittenWhole) {
  char path[] = "/tmp/tutti-log-test.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  setenv("TUTTI_DEBUG", "INFO", 1);
  setenv("TUTTI_DEBUG_FILE", path, 1);
  reloadLogConfig();
  std::string message;
  for (int i = 0; message.size() < 6000; ++i) message += " " + std::to_string(i);
  message += " the end";
  TUTTI_INFO(kSubsysInit, "calibration:%s", message.c_str());
  unsetenv("TUTTI_DEBUG");
  unsetenv("TUTTI_DEBUG_FILE");
  reloadLogConfig();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(path);
  const std::string log = text.str();
  const size_t at = log.find("tutti INFO calibration:");
  ASSERT_NE(at, std::string::npos) << log.substr(0, 200);
  EXPECT_EQ(log.substr(at + 23), message + "\n");
}

}  // namespace
}  // namespace tutti
