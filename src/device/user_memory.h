// Device memory and streams a program asks tutti for (tuttiMemAlloc,
// tuttiStreamCreate and the rest): the runtime's own, remembered so that a
// pointer or stream tutti did not hand out is refused instead of freed.
#pragma once

#include <cstddef>

#include "src/common/status.h"
#include "src/device/device_runtime.h"

namespace tutti {

Result<void*> allocateUserMemory(size_t bytes);
Status freeUserMemory(void* p);
// A copy between any two memories, finished when it returns.
Status copyNow(void* dst, const void* src, size_t bytes);

Result<DeviceStream> createUserStream();
Status destroyUserStream(DeviceStream s);
Status synchronizeUserStream(DeviceStream s);

}  // namespace tutti
