// Small text files read and written with plain system calls
// (src/common/text_file.h): whole files past one read's buffer, first
// lines, and files that are not there.
#include "src/common/text_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace tutti {
namespace {

std::string scratchPath(const char* what) {
  return "/tmp/tutti-text-file-test-" + std::to_string(getpid()) + "-" + what;
}

TEST(TextFile, WritesAndReadsBackAFileLargerThanOneRead) {
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "line " + std::to_string(i) + "\n";  // about 26 KB
  const std::string path = scratchPath("large");
  ASSERT_TRUE(writeTextFile(path, text));
  bool ok = false;
  EXPECT_EQ(readTextFile(path, &ok), text);
  EXPECT_TRUE(ok);
  EXPECT_EQ(readFirstLine(path), "line 0");
  ASSERT_TRUE(writeTextFile(path, "shorter"));  // replaces, not appends
  EXPECT_EQ(readTextFile(path), "shorter");
  EXPECT_EQ(readFirstLine(path), "shorter");
  unlink(path.c_str());
}

TEST(TextFile, AMissingFileReadsEmptyAndSaysSo) {
  bool ok = true;
  EXPECT_EQ(readTextFile(scratchPath("missing"), &ok), "");
  EXPECT_FALSE(ok);
  EXPECT_EQ(readFirstLine(scratchPath("missing")), "");
  EXPECT_FALSE(writeTextFile("/nonexistent-dir/x", "text"));
  EXPECT_FALSE(readFirstLine("/proc/sys/kernel/random/boot_id").empty());
}

}  // namespace
}  // namespace tutti
