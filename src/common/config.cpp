#include "src/common/config.h"

#include <cassert>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "src/common/config_table.h"

namespace tutti {

const std::vector<TunableInfo>& allTunables() {
#define TUTTI_TUNABLE_ENTRY(name, def, meaning) {#name, def, meaning},
  static const std::vector<TunableInfo> table = {TUTTI_CONFIG_TABLE(TUTTI_TUNABLE_ENTRY)};
#undef TUTTI_TUNABLE_ENTRY
  return table;
}

static const TunableInfo* findTunable(const char* name) {
  for (const auto& t : allTunables())
    if (std::strcmp(t.name, name) == 0) return &t;
  return nullptr;
}

std::string tunableString(const char* name, std::string* source) {
  const TunableInfo* info = findTunable(name);
  assert(info && "tunable missing from config_table.h");
  for (const char* prefix : {"TUTTI_", "NCCL_"}) {
    std::string var = std::string(prefix) + name;
    if (const char* v = std::getenv(var.c_str())) {
      if (source) *source = var;
      return v;
    }
  }
  if (source) *source = "default";
  return info ? info->defaultValue : "";
}

bool parseInt64(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 0);
  if (errno != 0 || end == text.c_str()) return false;
  while (*end == ' ') ++end;
  if (*end != '\0') return false;
  *out = v;
  return true;
}

Result<int64_t> tunableInt(const char* name) {
  std::string source;
  std::string text = tunableString(name, &source);
  int64_t v = 0;
  if (!parseInt64(text, &v))
    return InvalidArgument(source + "=\"" + text + "\" is not an integer");
  return v;
}

}  // namespace tutti
