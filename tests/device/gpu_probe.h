// Running GPU work in a child process. CUDA does not survive fork: a child
// of a process that touched CUDA fails its first CUDA call. So the test
// process itself never touches CUDA; the probe and every test body that
// does run in children.
#pragma once

#include <functional>
#include <string>

namespace tutti_test {

// Runs body in a forked child; what it returns ("" is success), or how the
// child died.
std::string inChild(const std::function<std::string()>& body);

// True when at least one device is visible; else *reason says why.
bool gpuAvailable(std::string* reason);

}  // namespace tutti_test
