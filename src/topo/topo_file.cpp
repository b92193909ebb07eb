#include <mutex>
#include <optional>

#include "src/common/config.h"
#include "src/common/json.h"
#include "src/common/log.h"
#include "src/common/text_file.h"
#include "src/topo/topology.h"

namespace tutti {

Result<TopoGraph> readTopologyFile(const std::string& path) {
  bool read = false;
  const std::string text = readTextFile(path, &read);
  if (!read) return InvalidArgument("cannot read topology file " + path);
  auto json = parseJson(text);
  if (!json.ok()) return json.status().withContext("topology file " + path);
  auto graph = TopoGraph::fromJson(json.value());
  if (!graph.ok()) return graph.status().withContext("topology file " + path);
  return graph;
}

Status writeTopologyFile(const TopoGraph& graph, const std::string& path) {
  if (!writeTextFile(path, graph.toJson().dump(2) + "\n")) return InvalidArgument("cannot write topology file " + path);
  return Status::Ok();
}

Result<TopoGraph> loadTopology() {
  std::string file = tunableString("TOPO_FILE");
  TopoGraph graph;
  if (!file.empty()) {
    TUTTI_ASSIGN_OR_RETURN(graph, readTopologyFile(file));
    TUTTI_INFO(kSubsysInit, "topology read from %s (TUTTI_TOPO_FILE)", file.c_str());
  } else {
    // The machine is probed once per process: ranks as threads would repeat
    // the work, and libudev (under hwloc) is not safe to enter from two
    // threads at once.
    static std::mutex mutex;
    static std::optional<TopoGraph> detected;
    static std::vector<std::string> notes;
    std::lock_guard<std::mutex> lock(mutex);
    if (!detected) detected = detectTopologyOncePerHost(topologyCacheDir(), &notes);
    graph = *detected;
    for (const auto& n : notes) TUTTI_INFO(kSubsysInit, "topology: %s", n.c_str());
  }
  std::string dump = tunableString("TOPO_DUMP_FILE");
  if (!dump.empty()) TUTTI_RETURN_IF_ERROR(writeTopologyFile(graph, expandPathPattern(dump)));
  return graph;
}

}  // namespace tutti
