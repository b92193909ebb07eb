// The extension module: exposes the creator that tutti_torch registers as
// the "tutti" backend.
#include <pybind11/chrono.h>
#include <torch/extension.h>

#include "process_group_tutti.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("create_process_group", &tutti_torch::ProcessGroupTutti::create,
        "Makes a tutti process group (store, rank, size, timeout)");
  m.def("cuda_path", [] {
#ifdef TUTTI_TORCH_CUDA
    return true;
#else
    return false;
#endif
  }, "Whether CUDA tensors go to tutti's stream-ordered device calls (else they are staged through the host)");
  m.def("version", [] {
    int v = 0;
    tuttiGetVersion(&v);
    return v;
  });
}
