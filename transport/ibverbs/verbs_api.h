// libibverbs, loaded at run time: a machine without it (or without any RDMA
// device) still runs tutti, and the verbs transport says why it cannot.
// Only the exported entry points are looked up; posting work and polling
// completions are inline in verbs.h and go through the device's own table.
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace tutti {

struct VerbsApi {
  ibv_device** (*getDeviceList)(int*);
  void (*freeDeviceList)(ibv_device**);
  const char* (*getDeviceName)(ibv_device*);
  ibv_context* (*openDevice)(ibv_device*);
  int (*closeDevice)(ibv_context*);
  int (*queryDevice)(ibv_context*, ibv_device_attr*);
  int (*queryPort)(ibv_context*, uint8_t, ibv_port_attr*);
  int (*queryGid)(ibv_context*, uint8_t, int, ibv_gid*);
  ibv_pd* (*allocPd)(ibv_context*);
  int (*deallocPd)(ibv_pd*);
  ibv_mr* (*regMr)(ibv_pd*, void*, size_t, int);
  int (*deregMr)(ibv_mr*);
  ibv_cq* (*createCq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroyCq)(ibv_cq*);
  ibv_qp* (*createQp)(ibv_pd*, ibv_qp_init_attr*);
  int (*destroyQp)(ibv_qp*);
  int (*modifyQp)(ibv_qp*, ibv_qp_attr*, int);
};

// The loaded library, or nullptr with the reason in *why.
const VerbsApi* verbsApi(std::string* why);

}  // namespace tutti
