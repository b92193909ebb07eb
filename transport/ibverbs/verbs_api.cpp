#include "transport/ibverbs/verbs_api.h"

#include <dlfcn.h>

#include <mutex>

namespace tutti {

namespace {

struct Loaded {
  VerbsApi api{};
  bool ok = false;
  std::string why;
};

template <typename F>
bool bind(void* lib, const char* name, F* out, std::string* why) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (!*out) *why = std::string("libibverbs.so.1 lacks ") + name;
  return *out != nullptr;
}

Loaded load() {
  Loaded l;
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.why = std::string("libibverbs.so.1 not found (") + (e ? e : "dlopen failed") + ")";
    return l;
  }
  VerbsApi& a = l.api;
  l.ok = bind(lib, "ibv_get_device_list", &a.getDeviceList, &l.why) &&
         bind(lib, "ibv_free_device_list", &a.freeDeviceList, &l.why) &&
         bind(lib, "ibv_get_device_name", &a.getDeviceName, &l.why) &&
         bind(lib, "ibv_open_device", &a.openDevice, &l.why) &&
         bind(lib, "ibv_close_device", &a.closeDevice, &l.why) &&
         bind(lib, "ibv_query_device", &a.queryDevice, &l.why) &&
         bind(lib, "ibv_query_port", &a.queryPort, &l.why) &&
         bind(lib, "ibv_query_gid", &a.queryGid, &l.why) &&
         bind(lib, "ibv_alloc_pd", &a.allocPd, &l.why) &&
         bind(lib, "ibv_dealloc_pd", &a.deallocPd, &l.why) &&
         bind(lib, "ibv_reg_mr", &a.regMr, &l.why) &&
         bind(lib, "ibv_dereg_mr", &a.deregMr, &l.why) &&
         bind(lib, "ibv_create_cq", &a.createCq, &l.why) &&
         bind(lib, "ibv_destroy_cq", &a.destroyCq, &l.why) &&
         bind(lib, "ibv_create_qp", &a.createQp, &l.why) &&
         bind(lib, "ibv_destroy_qp", &a.destroyQp, &l.why) &&
         bind(lib, "ibv_modify_qp", &a.modifyQp, &l.why);
  // The library stays loaded for the life of the process, as devices may.
  return l;
}

}  // namespace

const VerbsApi* verbsApi(std::string* why) {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load(); });
  if (!loaded.ok && why) *why = loaded.why;
  return loaded.ok ? &loaded.api : nullptr;
}

}  // namespace tutti
