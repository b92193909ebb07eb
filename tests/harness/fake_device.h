// Tests use the library's emulated device (src/device/emulated_device.h).
#pragma once

#include "src/device/emulated_device.h"

namespace tutti_test {
using FakeDevice = tutti::EmulatedDevice;
}  // namespace tutti_test
