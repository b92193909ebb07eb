// A tutti unique id passed through a c10d Store: one rank publishes it under
// a key, the others wait for it there (the store's timeout bounds the wait).
#pragma once

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti_torch {

inline void publishUniqueId(c10d::Store& store, const std::string& key, const tuttiUniqueId& id) {
  store.set(key, std::vector<uint8_t>(id.internal, id.internal + sizeof(id.internal)));
}

inline tuttiUniqueId awaitUniqueId(c10d::Store& store, const std::string& key) {
  tuttiUniqueId id;
  std::vector<uint8_t> bytes = store.get(key);
  TORCH_CHECK(bytes.size() == sizeof(id.internal), "tutti backend: the store's key '", key, "' holds ",
              bytes.size(), " bytes, not a unique id's ", sizeof(id.internal));
  std::memcpy(id.internal, bytes.data(), bytes.size());
  return id;
}

}  // namespace tutti_torch
