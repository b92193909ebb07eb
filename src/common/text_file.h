// Small text files (sysfs and procfs attributes, the topology cache) read
// with plain system calls: the first iostream of a process builds its
// locale, about 0.7 ms of each rank's init on this VM.
#pragma once

#include <string>

namespace tutti {

// The whole file, or "" when it cannot be read; `ok` (if given) says which.
std::string readTextFile(const std::string& path, bool* ok = nullptr);
// The first line of a small text file, or "" when it cannot be read.
std::string readFirstLine(const std::string& path);
// Creates or replaces the file with `text`; false when it cannot.
bool writeTextFile(const std::string& path, const std::string& text);
// The same, written aside (path.<pid>) and renamed, so that a reader sees
// the old file or the new one, never half of one.
bool replaceTextFile(const std::string& path, const std::string& text);

}  // namespace tutti
