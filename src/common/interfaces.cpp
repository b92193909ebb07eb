#include "src/common/interfaces.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstring>

#include "src/common/config.h"
#include "src/common/name_list.h"

namespace tutti {

std::vector<NetInterface> listInterfaces() {
  std::vector<NetInterface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
    int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    if (fam == AF_INET6) {
      auto* a6 = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) continue;
    }
    NetInterface ni;
    ni.name = i->ifa_name;
    ni.address.length = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&ni.address.storage, i->ifa_addr, ni.address.length);
    out.push_back(ni);
  }
  freeifaddrs(list);
  return out;
}

static std::vector<NetInterface> filter(const std::vector<NetInterface>& all,
                                        const NameList& names, int family) {
  std::vector<NetInterface> out;
  for (const auto& i : all)
    if ((family == 0 || i.address.family() == family) && names.matches(i.name)) out.push_back(i);
  return out;
}

static std::string describe(const std::vector<NetInterface>& all) {
  if (all.empty()) return "none";
  std::string s;
  for (const auto& i : all) {
    if (!s.empty()) s += ", ";
    std::string addr = i.address.toString();
    s += i.name + " (" + addr.substr(0, addr.rfind(':')) + ")";
  }
  return s;
}

Result<std::vector<NetInterface>> selectInterfaces(const std::vector<NetInterface>& all,
                                                   const std::string& spec, int family) {
  std::vector<NetInterface> chosen;
  if (!spec.empty()) {
    chosen = filter(all, NameList(spec), family);
  } else {
    chosen = filter(all, NameList("^lo,docker,virbr"), family);
    if (chosen.empty()) chosen = filter(all, NameList("docker,virbr"), family);
    if (chosen.empty()) chosen = filter(all, NameList("lo"), family);
  }
  if (chosen.empty()) {
    std::string fam = family == AF_INET ? " with family AF_INET"
                      : family == AF_INET6 ? " with family AF_INET6" : "";
    return InvalidArgument("no network interface matches TUTTI_SOCKET_IFNAME=\"" + spec + "\"" +
                           fam + "; interfaces here: " + describe(all));
  }
  return chosen;
}

Result<std::vector<NetInterface>> chooseInterfacesFromEnv() {
  std::string famText = tunableString("SOCKET_FAMILY");
  int family = 0;
  if (famText == "AF_INET" || famText == "4") family = AF_INET;
  else if (famText == "AF_INET6" || famText == "6") family = AF_INET6;
  else if (!famText.empty())
    return InvalidArgument("TUTTI_SOCKET_FAMILY=\"" + famText + "\" is not AF_INET or AF_INET6");
  return selectInterfaces(listInterfaces(), tunableString("SOCKET_IFNAME"), family);
}

bool anyVerbsDevice() {
  DIR* d = opendir("/sys/class/infiniband");
  if (!d) return false;
  bool any = false;
  while (dirent* e = readdir(d)) any |= e->d_name[0] != '.';
  closedir(d);
  return any;
}

}  // namespace tutti
