#include "process_group_tutti.h"

#include <c10/util/Exception.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "tensor_map.h"
#include "tutti_work.h"

namespace tutti_torch {

namespace {

const char* kUniqueIdKey = "tutti_unique_id";

void* data(const at::Tensor& t) { return t.data_ptr(); }
size_t count(const at::Tensor& t) { return static_cast<size_t>(t.numel()); }

// PREMUL_SUM's factor (torch.distributed._make_nccl_premul_sum).
double premulFactor(const c10d::ReduceOp& op) {
  auto* s = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(s, "tutti backend: PREMUL_SUM without its factor");
  return s->tensor_factors.empty() ? s->double_factor : s->tensor_factors[0].item<double>();
}

}  // namespace

ProcessGroupTutti::ProcessGroupTutti(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                     int size, std::chrono::milliseconds timeout)
    : GroupBase(rank, size) {
  tuttiUniqueId id;
  if (rank == 0) {
    check(tuttiGetUniqueId(&id), "tuttiGetUniqueId");
    store->set(kUniqueIdKey, std::vector<uint8_t>(id.internal, id.internal + sizeof(id.internal)));
  } else {
    std::vector<uint8_t> bytes = store->get(kUniqueIdKey);
    TORCH_CHECK(bytes.size() == sizeof(id.internal), "tutti backend: the store holds a unique id of ",
                bytes.size(), " bytes");
    std::memcpy(id.internal, bytes.data(), bytes.size());
  }
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout).count();
  config.timeoutSeconds = seconds > 0 ? static_cast<int>(seconds) : 0;
  check(tuttiCommInitRankConfig(&comm_, size, id, rank, &config), "tuttiCommInitRankConfig");
  queue_ = std::make_unique<tutti::SerialWorker>();
}

ProcessGroupTutti::~ProcessGroupTutti() {
  queue_.reset();  // finishes what was issued
  if (comm_) tuttiCommDestroy(comm_);
}

c10::intrusive_ptr<GroupBase> ProcessGroupTutti::create(const c10::intrusive_ptr<c10d::Store>& store,
                                                        int rank, int size,
                                                        const std::chrono::duration<float>& timeout) {
  return c10::make_intrusive<ProcessGroupTutti>(
      store, rank, size, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
}

void ProcessGroupTutti::check(tuttiResult_t result, const char* call) const {
  if (result == tuttiSuccess) return;
  throw std::runtime_error(std::string("tutti backend, rank ") + std::to_string(getRank()) + ": " +
                           call + " failed (" + tuttiGetErrorString(result) +
                           "): " + tuttiGetLastError(comm_));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::enqueue(c10d::OpType type,
                                                          std::vector<at::Tensor> outputs,
                                                          std::function<void()> body) {
  auto work = c10::make_intrusive<TuttiWork>(getRank(), type, std::move(outputs));
  queue_->post([work, body = std::move(body)] {
    try {
      body();
      work->complete();
    } catch (...) {
      work->fail(std::current_exception());
    }
  });
  return work;
}

void ProcessGroupTutti::allreduceHost(const at::Tensor& t, const c10d::ReduceOp& op) {
  if (isBitwise(op)) {
    // tutti has no bitwise ops: gather every rank's tensor and fold it here.
    at::Tensor all = at::empty({getSize(), t.numel()}, t.options());
    check(tuttiAllGather(data(t), data(all), count(t), tuttiType(t.scalar_type()), comm_, nullptr),
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
  check(tuttiAllReduce(data(t), data(t), count(t), tuttiType(t.scalar_type()), top, comm_, nullptr),
        "tuttiAllReduce");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  Staged s = stage(onlyTensor(tensors, "allreduce"));
  tuttiType(s.host.scalar_type());  // refuse unsupported types at the call
  auto op = opts.reduceOp;
  return enqueue(c10d::OpType::ALLREDUCE, tensors, [this, s, op] {
    allreduceHost(s.host, op);
    unstage(s);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  Staged s = stage(onlyTensor(tensors, "broadcast"));
  auto type = tuttiType(s.host.scalar_type());
  int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::BROADCAST, tensors, [this, s, type, root] {
    check(tuttiBroadcast(data(s.host), data(s.host), count(s.host), type, root, comm_, nullptr),
          "tuttiBroadcast");
    unstage(s);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  Staged s = stage(onlyTensor(tensors, "reduce"));
  auto type = tuttiType(s.host.scalar_type());
  auto op = tuttiOp(opts.reduceOp, s.host.scalar_type());
  int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::REDUCE, tensors, [this, s, type, op, root] {
    check(tuttiReduce(data(s.host), data(s.host), count(s.host), type, op, root, comm_, nullptr),
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
    TORCH_CHECK(o.numel() == in.host.numel() && o.scalar_type() == in.host.scalar_type(),
                "tutti backend: allgather's output tensors must match the input's size and type");
  auto type = tuttiType(in.host.scalar_type());
  std::vector<at::Tensor> outs = outputs[0];
  return enqueue(c10d::OpType::ALLGATHER, outs, [this, in, type, outs] {
    at::Tensor flat = at::empty({getSize(), in.host.numel()}, in.host.options());
    check(tuttiAllGather(data(in.host), data(flat), count(in.host), type, comm_, nullptr),
          "tuttiAllGather");
    for (int r = 0; r < getSize(); ++r) outs[r].copy_(flat[r].view(outs[r].sizes()));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::_allgather_base(at::Tensor& output,
                                                                  at::Tensor& input,
                                                                  const c10d::AllgatherOptions&) {
  Staged in = stage(input), out = stage(output);
  TORCH_CHECK(out.host.numel() == in.host.numel() * getSize(),
              "tutti backend: _allgather_base's output must hold world_size x the input");
  auto type = tuttiType(in.host.scalar_type());
  return enqueue(c10d::OpType::_ALLGATHER_BASE, {output}, [this, in, out, type] {
    check(tuttiAllGather(data(in.host), data(out.host), count(in.host), type, comm_, nullptr),
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
    TORCH_CHECK(t.numel() == out.host.numel(), "tutti backend: reduce_scatter's inputs must match the output's size");
    flat.push_back(t.to(at::kCPU).reshape(-1));
  }
  at::Tensor in = at::cat(flat);
  auto type = tuttiType(out.host.scalar_type());
  auto op = tuttiOp(opts.reduceOp, out.host.scalar_type());
  return enqueue(c10d::OpType::REDUCE_SCATTER, outputs, [this, in, out, type, op] {
    check(tuttiReduceScatter(data(in), data(out.host), count(out.host), type, op, comm_, nullptr),
          "tuttiReduceScatter");
    unstage(out);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  Staged in = stage(input), out = stage(output);
  TORCH_CHECK(in.host.numel() == out.host.numel() * getSize(),
              "tutti backend: _reduce_scatter_base's input must hold world_size x the output");
  auto type = tuttiType(out.host.scalar_type());
  auto op = tuttiOp(opts.reduceOp, out.host.scalar_type());
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, [this, in, out, type, op] {
    check(tuttiReduceScatter(data(in.host), data(out.host), count(out.host), type, op, comm_, nullptr),
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
  auto sendCounts = elementsPer(in.host, inputSplits, "input");
  auto recvCounts = elementsPer(out.host, outputSplits, "output");
  auto type = tuttiType(in.host.scalar_type());
  return enqueue(c10d::OpType::ALLTOALL_BASE, {output}, [this, in, out, type, sendCounts, recvCounts] {
    size_t es = in.host.element_size(), sendAt = 0, recvAt = 0;
    auto* src = static_cast<const char*>(data(in.host));
    auto* dst = static_cast<char*>(data(out.host));
    tuttiGroupStart();
    for (int p = 0; p < getSize(); ++p) {
      tuttiSend(src + sendAt * es, sendCounts[p], type, p, comm_, nullptr);
      tuttiRecv(dst + recvAt * es, recvCounts[p], type, p, comm_, nullptr);
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
    tuttiType(ins.back().host.scalar_type());
  }
  return enqueue(c10d::OpType::ALLTOALL, outputs, [this, ins, outs] {
    tuttiGroupStart();
    for (int p = 0; p < getSize(); ++p) {
      tuttiSend(data(ins[p].host), count(ins[p].host), tuttiType(ins[p].host.scalar_type()), p, comm_, nullptr);
      tuttiRecv(data(outs[p].host), count(outs[p].host), tuttiType(outs[p].host.scalar_type()), p, comm_, nullptr);
    }
    check(tuttiGroupEnd(), "tuttiGroupEnd (all-to-all)");
    for (const auto& o : outs) unstage(o);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::barrier(const c10d::BarrierOptions&) {
  return enqueue(c10d::OpType::BARRIER, {}, [this] { check(tuttiBarrier(comm_, nullptr), "tuttiBarrier"); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                       int /*tag: tutti orders each pair's messages*/) {
  Staged s = stage(onlyTensor(tensors, "send"));
  auto type = tuttiType(s.host.scalar_type());
  return enqueue(c10d::OpType::SEND, tensors, [this, s, type, dstRank] {
    check(tuttiSend(data(s.host), count(s.host), type, dstRank, comm_, nullptr), "tuttiSend");
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                       int /*tag*/) {
  Staged s = stage(onlyTensor(tensors, "recv"));
  auto type = tuttiType(s.host.scalar_type());
  return enqueue(c10d::OpType::RECV, tensors, [this, s, type, srcRank] {
    check(tuttiRecv(data(s.host), count(s.host), type, srcRank, comm_, nullptr), "tuttiRecv");
    unstage(s);
  });
}

}  // namespace tutti_torch
