// The extension module: exposes the creator that tutti_torch registers as
// the "tutti" backend.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include <optional>
#include <vector>

#include "device_stream.h"
#include "live_groups.h"
#include "process_group_tutti.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using tutti_torch::ProcessGroupTutti;
  m.def("create_process_group", &ProcessGroupTutti::create,
        "Makes a tutti process group (store, rank, size, timeout)");
#if TUTTI_TORCH_AT_LEAST(2, 8)
  // Registered with a copy (pybind11 hands Python the most derived type).
  using TuttiOptions = ProcessGroupTutti::Options;
  pybind11::class_<TuttiOptions, c10d::Backend::Options, c10::intrusive_ptr<TuttiOptions>>(m, "Options")
      .def("__copy__", [](const TuttiOptions& o) { return c10::make_intrusive<TuttiOptions>(o); })
      .def("__deepcopy__", [](const TuttiOptions& o, pybind11::dict) { return c10::make_intrusive<TuttiOptions>(o); },
           pybind11::arg("memo"));
  // Registered so that PyTorch hands Python tutti's groups as this type
  // (pybind11 finds the most derived registered type).
  pybind11::class_<ProcessGroupTutti, c10d::Backend, c10::intrusive_ptr<ProcessGroupTutti>>(m, "ProcessGroupTutti")
      // After an eager init (device_id), PyTorch's new_group has the ranks
      // outside the new group call this, as NCCL's split needs every rank of
      // the parent. A tutti group is made by its members alone (from the
      // store), also where only they call new_group (use_local_synchronization):
      // there is nothing for the others to do.
      .def("perform_nocolor_split", [](ProcessGroupTutti&, const std::optional<at::Device>&) {},
           pybind11::arg("device") = std::nullopt)
      // PyTorch binds `options` on its Backend only from some 2.x release
      // on (2.11 lacks it: AttributeError on an H200's PyTorch).
      .def_property_readonly("options", &ProcessGroupTutti::getBackendOptions)
      // shrink_group reads these on the backend; older PyTorch binds neither.
      .def_property_readonly("supports_shrinking", &ProcessGroupTutti::supportsShrinking)
      .def("shrink", &ProcessGroupTutti::shrink, pybind11::arg("ranks_to_exclude"), pybind11::arg("shrink_flags") = 0,
           pybind11::arg("opts_override") = nullptr, pybind11::call_guard<pybind11::gil_scoped_release>())
      .def("failed_ranks", &ProcessGroupTutti::failedRanks,
           "The ranks tutti named as failed (dead, stopped, or the cause of a failed call)")
      .def("grow", &ProcessGroupTutti::grow, pybind11::arg("new_size"), pybind11::arg("store"), pybind11::arg("key"),
           "tuttiCommGrow: every member calls it; new processes call join_grown (tutti_torch.grow)");
  m.def("join_grown", &ProcessGroupTutti::joinGrown, pybind11::arg("store"), pybind11::arg("key"),
        pybind11::arg("rank"), pybind11::arg("new_size"), pybind11::arg("timeout"),
        "A new process's side of a grow: its backend in the grown group (tutti_torch.join_grown)");
#endif
  m.def("cuda_path", &tutti_torch::deviceCallsBuilt, "Whether CUDA tensors go to tutti's stream-ordered device calls (else they are staged through the host)");
  m.def("_quiesce_before_exit", &tutti_torch::live_groups::quiesceAll,
        "Drains every tutti group's threads (tutti_torch's atexit hook)");
  m.def("version", [] {
    int v = 0;
    tuttiGetVersion(&v);
    return v;
  });
}
