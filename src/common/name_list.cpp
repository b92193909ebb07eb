#include "src/common/name_list.h"

#include <cstdlib>

namespace tutti {

NameList::NameList(const std::string& spec) {
  size_t pos = 0;
  if (pos < spec.size() && spec[pos] == '^') {
    exclude_ = true;
    ++pos;
  }
  if (pos < spec.size() && spec[pos] == '=') {
    exact_ = true;
    ++pos;
  }
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    std::string item = spec.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) continue;
    Entry e;
    size_t colon = item.find(':');
    if (colon != std::string::npos) {
      e.port = std::atoi(item.c_str() + colon + 1);
      item.resize(colon);
    }
    e.name = item;
    entries_.push_back(e);
  }
}

bool NameList::matches(const std::string& name, int port) const {
  if (entries_.empty()) return true;
  bool hit = false;
  for (const Entry& e : entries_) {
    bool nameOk = exact_ ? name == e.name : name.compare(0, e.name.size(), e.name) == 0;
    bool portOk = e.port < 0 || port < 0 || e.port == port;
    if (nameOk && portOk) {
      hit = true;
      break;
    }
  }
  return exclude_ ? !hit : hit;
}

std::string NameList::toString() const {
  std::string s = exclude_ ? "^" : "";
  if (exact_) s += "=";
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (i) s += ",";
    s += entries_[i].name;
    if (entries_[i].port >= 0) s += ":" + std::to_string(entries_[i].port);
  }
  return s;
}

}  // namespace tutti
