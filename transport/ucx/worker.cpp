#include "transport/ucx/worker.h"

#include <uct/api/uct.h>

#include <set>

#include "src/common/log.h"

namespace tutti {

Status ucxError(const std::string& what, ucs_status_t status) {
  std::string m = "UCX: " + what + ": " + ucs_status_string(status);
  if (status == UCS_ERR_ENDPOINT_TIMEOUT || status == UCS_ERR_CONNECTION_RESET ||
      status == UCS_ERR_UNREACHABLE || status == UCS_ERR_CANCELED)
    return RemoteError(m);
  return SystemError(m);
}

UcxRegion& UcxRegion::operator=(UcxRegion&& o) noexcept {
  if (this != &o) {
    this->~UcxRegion();
    context_ = o.context_;
    memh_ = o.memh_;
    o.memh_ = nullptr;
  }
  return *this;
}

UcxRegion::~UcxRegion() {
  if (memh_) ucp_mem_unmap(context_, memh_);
  memh_ = nullptr;
}

Result<std::shared_ptr<UcxWorker>> UcxWorker::create(size_t chunkBytes) {
  std::shared_ptr<UcxWorker> w(new UcxWorker());
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);  // UCX_* from the environment
  if (st != UCS_OK) return ucxError("reading UCX_* configuration", st);
  if (!getenv("UCX_RNDV_THRESH") && chunkBytes > 0 && !hasRdma(fabricResources())) {
    std::string thresh = std::to_string(chunkBytes + 1);
    (void)ucp_config_modify(config, "RNDV_THRESH", thresh.c_str());  // a hint: ignore failure
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  st = ucp_init(&params, config, &w->context_);
  ucp_config_release(config);
  if (st != UCS_OK) return ucxError("creating a context (check UCX_TLS and UCX_NET_DEVICES)", st);

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  st = ucp_worker_create(w->context_, &wp, &w->worker_);
  if (st != UCS_OK) return ucxError("creating a worker", st);

  ucp_address_t* addr = nullptr;
  size_t len = 0;
  st = ucp_worker_get_address(w->worker_, &addr, &len);
  if (st != UCS_OK) return ucxError("reading the worker address", st);
  w->address_.assign(reinterpret_cast<const char*>(addr), len);
  ucp_worker_release_address(w->worker_, addr);
  return w;
}

UcxWorker::~UcxWorker() {
  std::lock_guard<std::mutex> guard(lock_);
  // Flush each endpoint briefly; force-close those that failed or do not finish.
  for (auto& [rank, p] : peers_) {
    if (!p->ep) continue;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = p->failure != UCS_OK ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    void* req = ucp_ep_close_nbx(p->ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
      for (int i = 0; i < 100000 && ucp_request_check_status(req) == UCS_INPROGRESS; ++i)
        ucp_worker_progress(worker_);
      if (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_request_cancel(worker_, req);
      ucp_request_free(req);
    }
  }
  peers_.clear();
  if (worker_) ucp_worker_destroy(worker_);
  if (context_) ucp_cleanup(context_);
}

static void onPeerError(void* arg, ucp_ep_h, ucs_status_t status) {
  static_cast<UcxPeer*>(arg)->failure = status;
}

Result<UcxPeer*> UcxWorker::peer(int rank, const std::string& name, bool sameHost) {
  auto it = peers_.find(rank);
  if (it != peers_.end()) return it->second.get();
  if (rank < 0 || rank >= static_cast<int>(peerAddresses_.size()) || peerAddresses_[rank].empty())
    return InternalError("UCX: no worker address for " + name + " (addresses not swapped)");
  auto p = std::make_unique<UcxPeer>();
  p->name = name;
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                  UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.address = reinterpret_cast<const ucp_address_t*>(peerAddresses_[rank].data());
  ep.err_handler.cb = onPeerError;
  ep.err_handler.arg = p.get();
  // Across hosts, peer-failure mode: a dead peer completes our requests with
  // an error instead of leaving them pending. UCX's shared-memory transports
  // lack it, and on one host the connections watch the peer's process anyway.
  ep.err_mode = sameHost ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
  ucs_status_t st = ucp_ep_create(worker_, &ep, &p->ep);
  if (st != UCS_OK && !sameHost) {
    TUTTI_WARN(kSubsysNet, "UCX cannot report failures of %s on these transports (%s); relying on "
               "TUTTI_TIMEOUT", name.c_str(), ucs_status_string(st));
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    st = ucp_ep_create(worker_, &ep, &p->ep);
  }
  if (st != UCS_OK) return ucxError("connecting to " + name, st);
  UcxPeer* raw = p.get();
  peers_[rank] = std::move(p);
  return raw;
}

Result<UcxRegion> UcxWorker::registerMemory(void* data, size_t bytes) {
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = data;
  mp.length = bytes;
  ucp_mem_h memh = nullptr;
  ucs_status_t st = ucp_mem_map(context_, &mp, &memh);
  if (st != UCS_OK) return ucxError("registering " + std::to_string(bytes) + " bytes", st);
  return UcxRegion(context_, memh);
}

std::vector<std::string> UcxWorker::fabricResources() {
  // Opening every memory domain is slow and the answer fixed: ask once per process.
  static const std::vector<std::string> resources = queryFabricResources();
  return resources;
}

std::vector<std::string> UcxWorker::queryFabricResources() {
  std::vector<std::string> out;
  uct_component_h* components = nullptr;
  unsigned ncomponents = 0;
  if (uct_query_components(&components, &ncomponents) != UCS_OK) return out;
  std::set<std::string> seen;
  for (unsigned c = 0; c < ncomponents; ++c) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    for (const auto& m : mds) {
      uct_md_config_t* config = nullptr;
      if (uct_md_config_read(components[c], nullptr, nullptr, &config) != UCS_OK) continue;
      uct_md_h md = nullptr;
      ucs_status_t st = uct_md_open(components[c], m.md_name, config, &md);
      uct_config_release(config);
      if (st != UCS_OK) continue;
      uct_tl_resource_desc_t* tls = nullptr;
      unsigned ntls = 0;
      if (uct_md_query_tl_resources(md, &tls, &ntls) == UCS_OK) {
        for (unsigned t = 0; t < ntls; ++t) {
          std::string entry = std::string(tls[t].tl_name) + "/" + tls[t].dev_name;
          if (seen.insert(entry).second) out.push_back(entry);
        }
        uct_release_tl_resource_list(tls);
      }
      uct_md_close(md);
    }
  }
  uct_release_component_list(components);
  return out;
}

bool UcxWorker::hasRdma(const std::vector<std::string>& resources) {
  for (const std::string& r : resources)
    for (const char* tl : {"rc", "dc", "ud"})
      if (r.rfind(tl, 0) == 0) return true;
  return false;
}

std::string UcxWorker::describe() {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  std::string out = "UCX " + std::to_string(major) + "." + std::to_string(minor) + "." +
                    std::to_string(release);
  std::string list;
  for (const std::string& r : fabricResources()) list += (list.empty() ? "" : ", ") + r;
  return out + (list.empty() ? "" : " (" + list + ")");
}

}  // namespace tutti
