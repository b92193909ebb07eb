// NCCL's name-list grammar, used for interfaces (TUTTI_SOCKET_IFNAME), HCAs and
// log subsystems: a comma list of names, each optionally ":port"; a leading '^'
// makes it an exclude list; a leading '=' (after any '^') makes names match
// exactly instead of by prefix.
#pragma once

#include <string>
#include <vector>

namespace tutti {

class NameList {
 public:
  explicit NameList(const std::string& spec);

  // True when name (with port, or -1 for any) is selected by the list. An
  // empty list selects everything.
  bool matches(const std::string& name, int port = -1) const;

  bool empty() const { return entries_.empty(); }
  bool exclude() const { return exclude_; }
  bool exact() const { return exact_; }
  std::string toString() const;

 private:
  struct Entry {
    std::string name;
    int port = -1;  // -1: any port
  };
  std::vector<Entry> entries_;
  bool exclude_ = false;
  bool exact_ = false;
};

}  // namespace tutti
