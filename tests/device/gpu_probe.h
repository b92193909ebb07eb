// Whether a CUDA device is usable, asked in a child process: a parent that
// touched CUDA could not fork working ranks afterwards.
#pragma once

#include <string>

namespace tutti_test {

// True when at least one device is visible; else *reason says why.
bool gpuAvailable(std::string* reason);

}  // namespace tutti_test
