#include "process_group_tutti.h"

#include <c10/util/Exception.h>

#include <pybind11/pybind11.h>

#include <optional>
#include <stdexcept>
#include <string>

#include <c10/core/StreamGuard.h>

#include "device_stream.h"
#include "live_groups.h"
#include "point_to_point.h"
#include "stream_work.h"
#include "tensor_map.h"
#include "tutti_work.h"
#include "unique_id_store.h"

namespace tutti_torch {

namespace {

const char* kUniqueIdKey = "tutti_unique_id";

void* data(const at::Tensor& t) { return t.data_ptr(); }
size_t count(const at::Tensor& t) { return static_cast<size_t>(t.numel()); }

// PREMUL_SUM's factor (torch.distributed._make_nccl_premul_sum).
double premulFactor(const c10d::ReduceOp& op) {
  auto* s = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(s, "tutti backend: PREMUL_SUM without its factor");
  return s->tensor_factor.defined() ? s->tensor_factor.item<double>() : s->double_factor;
}

// The tutti op for a reduction of `input`: PREMUL_SUM (FSDP's gradient
// scaling) scales a copy of the input and sums it.
tuttiRedOp_t reductionOf(const c10d::ReduceOp& op, at::Tensor* input) {
  if (op != c10d::ReduceOp::PREMUL_SUM) return tuttiOp(op, input->scalar_type());
  *input = *input * premulFactor(op);
  return tuttiSum;
}

}  // namespace

ProcessGroupTutti::ProcessGroupTutti(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                     int size, std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size), store_(store), timeout_(timeout) {
  tuttiUniqueId id;
  if (rank == 0) {
    check(tuttiGetUniqueId(&id), "tuttiGetUniqueId");
    publishUniqueId(*store, kUniqueIdKey, id);
  } else {
    id = awaitUniqueId(*store, kUniqueIdKey);
  }
  tuttiConfig_t config = configFor(timeout);
  check(tuttiCommInitRankConfig(&comm_, size, id, rank, &config), "tuttiCommInitRankConfig");
  startQueues();
}

ProcessGroupTutti::ProcessGroupTutti(tuttiComm_t comm, const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                     int size, std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size), comm_(comm), store_(store), timeout_(timeout) {
  startQueues();
}

void ProcessGroupTutti::startQueues() {
  queue_ = std::make_unique<tutti::SerialWorker>();
  completions_ = std::make_unique<tutti::SerialWorker>();
  finisher_ = std::make_unique<CompletionPool>();
#if TUTTI_TORCH_AT_LEAST(2, 8)
  options_ = c10::make_intrusive<Options>(timeout_);
#endif
  live_groups::add(this);
}

void ProcessGroupTutti::quiesce() {
  queue_->drain();
  completions_->drain();
  if (finisher_) finisher_->drain();  // gone after shutdown(), which drained it
}

ProcessGroupTutti::~ProcessGroupTutti() {
  // The queues' last calls free their tensors on the queues' threads, and a
  // tensor that Python let go of takes the GIL to free its Python object:
  // waiting for those threads while holding the GIL would wait forever.
  std::optional<pybind11::gil_scoped_release> withoutGil;
  if (Py_IsInitialized() && PyGILState_Check()) withoutGil.emplace();
  live_groups::remove(this);
  p2p_.reset();
  queue_.reset();  // finishes what was issued
  completions_.reset();
  finisher_.reset();
  if (comm_) tuttiCommDestroy(comm_);
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupTutti::create(const c10::intrusive_ptr<c10d::Store>& store,
                                                        int rank, int size,
                                                        const std::chrono::duration<float>& timeout) {
  return c10::make_intrusive<ProcessGroupTutti>(
      store, rank, size, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
}

tuttiConfig_t ProcessGroupTutti::configFor(std::chrono::milliseconds timeout) {
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  // Rounded up: a call must not give up before the group's timeout.
  auto seconds = std::chrono::ceil<std::chrono::seconds>(timeout).count();
  config.timeoutSeconds = seconds > 0 ? static_cast<int>(seconds) : 0;
  // Calls run on queue_'s thread while the caller's threads compute.
  config.callsBesideCompute = 1;
  return config;
}

void ProcessGroupTutti::ensureOpen(const char* call) const {
  State state = state_.load();
  TORCH_CHECK(state == State::kOpen, "tutti backend, rank ", getRank(), ": ", call, " on a group that was ",
              state == State::kAborted ? "aborted" : "shut down");
}

void ProcessGroupTutti::check(tuttiResult_t result, const char* call) const {
  if (result == tuttiSuccess) return;
  std::string prefix = std::string("tutti backend, rank ") + std::to_string(getRank()) + ": " + call;
  // " Timed out " is what PyTorch's watchdog and tests look for.
  if (result == tuttiTimeout)
    throw std::runtime_error(prefix + " Timed out after " + std::to_string(timeout_.count()) +
                             " ms: " + tuttiGetLastError(comm_));
  throw std::runtime_error(prefix + " failed (" + tuttiGetErrorString(result) + "): " + tuttiGetLastError(comm_));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::enqueue(c10d::OpType type,
                                                          std::vector<at::Tensor> outputs,
                                                          const at::Tensor& where,
                                                          std::function<void(void* stream)> body) {
  // The call's name is made only for the error: not on every call.
  if (state_.load() != State::kOpen) ensureOpen(c10d::opTypeToString(type).c_str());
  ++sequence_;
  if (where.defined() && where.is_cuda()) return onStream(type, std::move(outputs), where, std::move(body));
  auto work = c10::make_intrusive<TuttiWork>(getRank(), type, std::move(outputs));
  queue_->post([work, body = std::move(body), finisher = finisher_.get()] {
    std::exception_ptr error;
    try {
      body(nullptr);
    } catch (...) {
      error = std::current_exception();
    }
    finisher->post([work, error] { error ? work->fail(error) : work->complete(); });
  });
  return issued(work);
}

// Issued from the queue too, so that tutti sees every call in issue order
// from one thread, but waited for: tutti queues it on the caller's stream
// and returns at once. The torch operations around it (copies back, the
// bitwise fold) go on the same stream.
c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::onStream(c10d::OpType type, std::vector<at::Tensor> outputs,
                                                           const at::Tensor& where,
                                                           std::function<void(void* stream)> body) {
  int device = -1;
  check(tuttiCommCuDevice(comm_, &device), "tuttiCommCuDevice");
  TORCH_CHECK(device == where.device().index(), "tutti backend, rank ", getRank(), ": a tensor on ",
              where.device(), " but the communicator was made on device ", device,
              " (call torch.cuda.set_device before init_process_group)");
  c10::Stream stream = currentStream(where.device());
  void* handle = streamHandle(stream);
  std::exception_ptr error;
  queue_->post([&] {
    try {
      c10::StreamGuard onCallersStream(stream);
      body(handle);
    } catch (...) {
      error = std::current_exception();
    }
  });
  queue_->drain();
  if (error) std::rethrow_exception(error);
  c10::Event done(where.device().type());
  done.record(stream);
  return issued(c10::make_intrusive<StreamWork>(getRank(), type, std::move(outputs), where.device(),
                                                std::move(done), comm_, *completions_, *finisher_));
}

void ProcessGroupTutti::allreduceIn(const at::Tensor& t, const c10d::ReduceOp& op, void* stream) {
  if (isBitwise(op)) {
    // tutti has no bitwise ops: gather every rank's tensor and fold it here.
    at::Tensor all = at::empty({getSize(), t.numel()}, t.options());
    check(tuttiAllGather(data(t), data(all), count(t), tuttiType(t.scalar_type()), comm_, stream),
          "tuttiAllGather");
    at::Tensor acc = all[0].clone();
    for (int r = 1; r < getSize(); ++r) {
      if (op == c10d::ReduceOp::BAND) acc.bitwise_and_(all[r]);
      else if (op == c10d::ReduceOp::BOR) acc.bitwise_or_(all[r]);
      else acc.bitwise_xor_(all[r]);
    }
    t.view(-1).copy_(acc);
    return;
  }
  tuttiRedOp_t top;
  if (op == c10d::ReduceOp::PREMUL_SUM) {
    t.mul_(premulFactor(op));
    top = tuttiSum;
  } else {
    top = tuttiOp(op, t.scalar_type());
  }
  check(tuttiAllReduce(data(t), data(t), count(t), tuttiType(t.scalar_type()), top, comm_, stream),
        "tuttiAllReduce");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  if (onlyTensor(tensors, "allreduce").is_sparse()) return allreduceSparse(tensors[0], opts.reduceOp);
  Staged s = stage(onlyTensor(tensors, "allreduce"));
  tuttiType(s.buffer.scalar_type());  // refuse unsupported types at the call
  auto op = opts.reduceOp;
  return enqueue(c10d::OpType::ALLREDUCE, tensors, s.buffer, [this, s, op](void* stream) {
    allreduceIn(s.buffer, op, stream);
    unstage(s);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  Staged s = stage(onlyTensor(tensors, "broadcast"));
  auto type = tuttiType(s.buffer.scalar_type());
  int root = rootOf(opts.rootRank, "broadcast");
  return enqueue(c10d::OpType::BROADCAST, tensors, s.buffer, [this, s, type, root](void* stream) {
    check(tuttiBroadcast(data(s.buffer), data(s.buffer), count(s.buffer), type, root, comm_, stream),
          "tuttiBroadcast");
    unstage(s);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  Staged s = stage(onlyTensor(tensors, "reduce"));
  auto type = tuttiType(s.buffer.scalar_type());
  auto op = tuttiOp(opts.reduceOp, s.buffer.scalar_type());
  int root = rootOf(opts.rootRank, "reduce");
  return enqueue(c10d::OpType::REDUCE, tensors, s.buffer, [this, s, type, op, root](void* stream) {
    check(tuttiReduce(data(s.buffer), data(s.buffer), count(s.buffer), type, op, root, comm_, stream),
          "tuttiReduce");
    if (getRank() == root) unstage(s);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  Staged in = stage(onlyTensor(inputs, "allgather"));
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
              "tutti backend: allgather needs one list of ", getSize(), " output tensors");
  for (const auto& o : outputs[0])
    TORCH_CHECK(o.numel() == in.buffer.numel() && o.scalar_type() == in.buffer.scalar_type(),
                "tutti backend: allgather's output tensors must match the input's size and type");
  auto type = tuttiType(in.buffer.scalar_type());
  std::vector<at::Tensor> outs = outputs[0];
  return enqueue(c10d::OpType::ALLGATHER, outs, in.buffer, [this, in, type, outs](void* stream) {
    at::Tensor flat = at::empty({getSize(), in.buffer.numel()}, in.buffer.options());
    check(tuttiAllGather(data(in.buffer), data(flat), count(in.buffer), type, comm_, stream),
          "tuttiAllGather");
    for (int r = 0; r < getSize(); ++r) outs[r].copy_(flat[r].view(outs[r].sizes()));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::_allgather_base(at::Tensor& output,
                                                                  at::Tensor& input,
                                                                  const c10d::AllgatherOptions&) {
  Staged in = stage(input), out = stage(output);
  TORCH_CHECK(out.buffer.numel() == in.buffer.numel() * getSize(),
              "tutti backend: _allgather_base's output must hold world_size x the input");
  auto type = tuttiType(in.buffer.scalar_type());
  return enqueue(c10d::OpType::_ALLGATHER_BASE, {output}, in.buffer, [this, in, out, type](void* stream) {
    check(tuttiAllGather(data(in.buffer), data(out.buffer), count(in.buffer), type, comm_, stream),
          "tuttiAllGather");
    unstage(out);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  Staged out = stage(onlyTensor(outputs, "reduce_scatter"));
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
              "tutti backend: reduce_scatter needs one list of ", getSize(), " input tensors");
  std::vector<at::Tensor> flat;
  for (const auto& t : inputs[0]) {
    TORCH_CHECK(t.numel() == out.buffer.numel(), "tutti backend: reduce_scatter's inputs must match the output's size");
    flat.push_back(placed(t).reshape(-1));
  }
  at::Tensor in = at::cat(flat);
  auto type = tuttiType(out.buffer.scalar_type());
  auto op = reductionOf(opts.reduceOp, &in);
  return enqueue(c10d::OpType::REDUCE_SCATTER, outputs, out.buffer, [this, in, out, type, op](void* stream) {
    check(tuttiReduceScatter(data(in), data(out.buffer), count(out.buffer), type, op, comm_, stream),
          "tuttiReduceScatter");
    unstage(out);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  Staged in = stage(input), out = stage(output);
  TORCH_CHECK(in.buffer.numel() == out.buffer.numel() * getSize(),
              "tutti backend: _reduce_scatter_base's input must hold world_size x the output");
  auto type = tuttiType(out.buffer.scalar_type());
  auto op = reductionOf(opts.reduceOp, &in.buffer);
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, out.buffer, [this, in, out, type, op](void* stream) {
    check(tuttiReduceScatter(data(in.buffer), data(out.buffer), count(out.buffer), type, op, comm_, stream),
          "tuttiReduceScatter");
    unstage(out);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::alltoall_base(at::Tensor& output,
                                                                at::Tensor& input,
                                                                std::vector<int64_t>& outputSplits,
                                                                std::vector<int64_t>& inputSplits,
                                                                const c10d::AllToAllOptions&) {
  Staged in = stage(input), out = stage(output);
  int n = getSize();
  // Splits count rows of dim 0; none given means equal parts.
  auto elementsPer = [n](const at::Tensor& t, const std::vector<int64_t>& splits, const char* which) {
    std::vector<size_t> counts(n);
    int64_t rows = t.dim() ? t.size(0) : 1, rowElems = rows ? t.numel() / rows : 0;
    if (splits.empty()) {
      TORCH_CHECK(rows % n == 0, "tutti backend: alltoall_base's ", which, " has ", rows,
                  " rows, not a multiple of ", n);
      for (auto& c : counts) c = static_cast<size_t>(rows / n * rowElems);
    } else {
      TORCH_CHECK(static_cast<int>(splits.size()) == n, "tutti backend: alltoall_base's ", which,
                  " splits need ", n, " entries");
      for (int p = 0; p < n; ++p) counts[p] = static_cast<size_t>(splits[p] * rowElems);
    }
    return counts;
  };
  auto sendCounts = elementsPer(in.buffer, inputSplits, "input");
  auto recvCounts = elementsPer(out.buffer, outputSplits, "output");
  auto type = tuttiType(in.buffer.scalar_type());
  return enqueue(c10d::OpType::ALLTOALL_BASE, {output}, in.buffer, [this, in, out, type, sendCounts, recvCounts](void* stream) {
    size_t es = in.buffer.element_size(), sendAt = 0, recvAt = 0;
    auto* src = static_cast<const char*>(data(in.buffer));
    auto* dst = static_cast<char*>(data(out.buffer));
    tuttiGroupStart();
    for (int p = 0; p < getSize(); ++p) {
      tuttiSend(src + sendAt * es, sendCounts[p], type, p, comm_, stream);
      tuttiRecv(dst + recvAt * es, recvCounts[p], type, p, comm_, stream);
      sendAt += sendCounts[p];
      recvAt += recvCounts[p];
    }
    check(tuttiGroupEnd(), "tuttiGroupEnd (all-to-all)");
    unstage(out);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::alltoall(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllToAllOptions&) {
  TORCH_CHECK(static_cast<int>(inputs.size()) == getSize() && outputs.size() == inputs.size(),
              "tutti backend: alltoall needs ", getSize(), " input and output tensors");
  std::vector<Staged> ins, outs;
  for (size_t p = 0; p < inputs.size(); ++p) {
    ins.push_back(stage(inputs[p]));
    outs.push_back(stage(outputs[p]));
    tuttiType(ins.back().buffer.scalar_type());
  }
  return enqueue(c10d::OpType::ALLTOALL, outputs, ins[0].buffer, [this, ins, outs](void* stream) {
    tuttiGroupStart();
    for (int p = 0; p < getSize(); ++p) {
      tuttiSend(data(ins[p].buffer), count(ins[p].buffer), tuttiType(ins[p].buffer.scalar_type()), p, comm_, stream);
      tuttiRecv(data(outs[p].buffer), count(outs[p].buffer), tuttiType(outs[p].buffer.scalar_type()), p, comm_, stream);
    }
    check(tuttiGroupEnd(), "tuttiGroupEnd (all-to-all)");
    for (const auto& o : outs) unstage(o);
  });
}

int ProcessGroupTutti::rootOf(int64_t root, const char* call) const {
  TORCH_CHECK(root >= 0 && root < getSize(), "tutti backend, rank ", getRank(), ": ", call, "'s root ", root,
              " is not a rank of this group of ", getSize());
  return static_cast<int>(root);
}

// The root's list of one tensor per rank, each like `like`; nothing on the others.
std::vector<Staged> ProcessGroupTutti::stageRootList(const std::vector<std::vector<at::Tensor>>& lists,
                                                     const at::Tensor& like, bool isRoot, const char* call,
                                                     const char* which) const {
  std::vector<Staged> staged;
  if (!isRoot) {
    TORCH_CHECK(lists.empty() || (lists.size() == 1 && lists[0].empty()), "tutti backend, rank ", getRank(),
                ": ", call, " takes ", which, " tensors only on the root");
    return staged;
  }
  TORCH_CHECK(lists.size() == 1 && static_cast<int>(lists[0].size()) == getSize(), "tutti backend: ", call,
              " needs one list of ", getSize(), " ", which, " tensors on the root");
  for (const auto& t : lists[0]) {
    TORCH_CHECK(t.numel() == like.numel() && t.scalar_type() == like.scalar_type(), "tutti backend: ", call,
                "'s ", which, " tensors must match the other side's size and type");
    staged.push_back(stage(t));
  }
  return staged;
}

// Gather and scatter are point-to-point calls in one group, as NCCL's
// backend makes them: the root receives from (sends to) every rank, itself
// included.
c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                         std::vector<at::Tensor>& inputs,
                                                         const c10d::GatherOptions& opts) {
  Staged in = stage(onlyTensor(inputs, "gather"));
  const int root = rootOf(opts.rootRank, "gather");
  const bool isRoot = getRank() == root;
  std::vector<Staged> outs = stageRootList(outputs, in.buffer, isRoot, "gather", "output");
  auto type = tuttiType(in.buffer.scalar_type());
  std::vector<at::Tensor> result = isRoot ? outputs[0] : std::vector<at::Tensor>{};
  return enqueue(c10d::OpType::GATHER, result, in.buffer, [this, in, outs, type, root](void* stream) {
    tuttiGroupStart();
    for (int p = 0; p < static_cast<int>(outs.size()); ++p)
      tuttiRecv(data(outs[p].buffer), count(outs[p].buffer), type, p, comm_, stream);
    tuttiSend(data(in.buffer), count(in.buffer), type, root, comm_, stream);
    check(tuttiGroupEnd(), "tuttiGroupEnd (gather)");
    for (const auto& o : outs) unstage(o);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::scatter(std::vector<at::Tensor>& outputs,
                                                          std::vector<std::vector<at::Tensor>>& inputs,
                                                          const c10d::ScatterOptions& opts) {
  Staged out = stage(onlyTensor(outputs, "scatter"));
  const int root = rootOf(opts.rootRank, "scatter");
  const bool isRoot = getRank() == root;
  std::vector<Staged> ins = stageRootList(inputs, out.buffer, isRoot, "scatter", "input");
  auto type = tuttiType(out.buffer.scalar_type());
  return enqueue(c10d::OpType::SCATTER, outputs, out.buffer, [this, ins, out, type, root](void* stream) {
    tuttiGroupStart();
    for (int p = 0; p < static_cast<int>(ins.size()); ++p)
      tuttiSend(data(ins[p].buffer), count(ins[p].buffer), type, p, comm_, stream);
    tuttiRecv(data(out.buffer), count(out.buffer), type, root, comm_, stream);
    check(tuttiGroupEnd(), "tuttiGroupEnd (scatter)");
    unstage(out);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::barrier(const c10d::BarrierOptions&) {
  return enqueue(c10d::OpType::BARRIER, {}, at::Tensor(), [this](void*) { check(tuttiBarrier(comm_, nullptr), "tuttiBarrier"); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  return pointToPoint(onlyTensor(tensors, "send"), dstRank, tag, true);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  return pointToPoint(onlyTensor(tensors, "recv"), srcRank, tag, false);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  return pointToPoint(onlyTensor(tensors, "recv"), PointToPoint::kAnySource, tag, false);
}

// Host tensors go to the point-to-point channels, which complete in any
// order and move bytes, so every dtype goes (complex, int16 too). CUDA tensors are stream-ordered calls on the group's communicator:
// on one stream a send and a recv complete in issue order, as with NCCL.
c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::pointToPoint(const at::Tensor& tensor, int peer, int tag,
                                                               bool isSend) {
  ensureOpen(isSend ? "send" : "recv");
  Staged s = stage(tensor);
  auto opType = isSend ? c10d::OpType::SEND : peer == PointToPoint::kAnySource ? c10d::OpType::RECVANYSOURCE
                                                                               : c10d::OpType::RECV;
  if (s.buffer.is_cuda()) {
    TORCH_CHECK(peer != PointToPoint::kAnySource, "tutti backend, rank ", getRank(),
                ": recv from any source takes host tensors only");
    auto type = tuttiType(s.buffer.scalar_type());
    return enqueue(opType, {tensor}, s.buffer, [this, s, type, peer, isSend](void* stream) {
      if (isSend) {
        check(tuttiSend(data(s.buffer), count(s.buffer), type, peer, comm_, stream), "tuttiSend");
      } else {
        check(tuttiRecv(data(s.buffer), count(s.buffer), type, peer, comm_, stream), "tuttiRecv");
        unstage(s);
      }
    });
  }
  std::call_once(p2pMade_, [this] { p2p_ = std::make_unique<PointToPoint>(store_, getRank(), getSize(), timeout_); });
  auto work = c10::make_intrusive<TuttiWork>(getRank(), opType, std::vector<at::Tensor>{tensor});
  auto done = [work, s, isSend, finisher = finisher_.get()](int from, std::exception_ptr error) {
    if (!error && !isSend) unstage(s);
    finisher->post([work, from, error] {
      if (error) return work->fail(error);
      work->setSource(from);
      work->complete();
    });
  };
  if (isSend) p2p_->send(s.buffer, peer, tag, done);
  else p2p_->recv(s.buffer, peer, tag, done);
  return issued(work);
}

}  // namespace tutti_torch}  // namespace tutti_torch
