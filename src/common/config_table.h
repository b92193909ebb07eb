// The one table of every tunable: name (read as TUTTI_<name>, then NCCL_<name>),
// default, meaning. tutti-info prints it; nothing reads getenv for a tunable
// anywhere else.
// X(name, default, meaning)
#define TUTTI_CONFIG_TABLE(X)                                                                 \
  X(DEBUG, "", "log level: WARN, INFO or TRACE (empty: errors only)")                        \
  X(DEBUG_SUBSYS, "^TUNING", "log subsystems: INIT,COLL,P2P,NET,SHM,BOOTSTRAP,TUNING,ENV,ALL; ^ excludes") \
  X(DEBUG_FILE, "", "log to this file instead of stderr; %h is the host, %p the pid")         \
  X(TIMEOUT, "300", "seconds any blocking wait may last before it fails with tuttiTimeout")    \
  X(COMM_ID, "", "host:port of the rendezvous root (overrides the unique id's address)")      \
  X(SOCKET_IFNAME, "", "interfaces to use: prefix list, =exact, ^exclude (default: skip lo, docker*, virbr*)") \
  X(SOCKET_FAMILY, "", "AF_INET or AF_INET6 to force an address family")                       \
  X(NET, "", "network transport between hosts: socket, ucx or ib (default: ib where an RDMA device is usable, else socket)") \
  X(IB_HCA, "", "RDMA devices and ports to use: mlx5_0:1,mlx5_1; =exact, ^exclude (default: every active port)") \
  X(IB_GID_INDEX, "-1", "GID index for RoCE (-1: the port's first RoCE v2 IPv4 GID, else 0)") \
  X(IB_TIMEOUT, "20", "InfiniBand local ACK timeout exponent: 4.096 us * 2^value") \
  X(IB_RETRY_CNT, "7", "InfiniBand retransmissions before a queue pair fails") \
  X(NET_GDR_LEVEL, "PXB", "GPUDirect RDMA up to this PCI distance between GPU and NIC: LOC (never), PIX, PXB, PHB, SYS; or 0-4") \
  X(IB_QPS_PER_CONNECTION, "1", "RC queue pairs per connection; each chunk is striped over them") \
  X(SHM_DISABLE, "0", "1: never use shared memory between ranks of a host (use sockets)")      \
  X(HOSTID, "", "override the host identity used to group ranks by node")                      \
  X(NCHANNELS, "0", "channels to split each collective over (0: chosen by the cost model)")    \
  X(ALGO, "", "algorithms allowed: ring, tree, oneshot, rd, twolevel, hd (the last three: all-reduce across nodes); ^ excludes; per collective as allreduce:tree;broadcast:ring") \
  X(DETERMINISTIC, "0", "1: all-reduce, reduce and reduce-scatter combine every element in rank order, ((x0 + x1) + x2) + ..., bit for bit alike whatever the algorithm, channels, chunks or transport") \
  X(MATCH_CHECK_MS, "1000", "a call blocked this long asks the other ranks what they called under its number, and fails naming both calls if they differ (0: only at TUTTI_TIMEOUT)") \
  X(MEASURE_LINKS, "1", "1: a communicator of several nodes measures its links at init (latency and rate, inside and between nodes, every rank busy) and its cost model uses the figures; 0: typical values") \
  X(KEEP_CALL_TIMES, "1", "1: rank 0 of a communicator of several nodes keeps its large all-reduces' times in CACHE_DIR at destroy, and the next of the same shape prices algorithms by them (0: neither)") \
  X(NODE_CORES, "1", "1: network nodes that share one kernel's cores with more ranks than cores (containers, namespaces) each take an even share of them, the threads that make a communicator bound there (as cpusets would); 0: leave affinity alone") \
  X(CHECK_CALLS, "0", "1: before every host-buffer collective, ranks compare kind, count, dtype, op and root (catches mismatches that do not block; costs a small all-gather per call)") \
  X(TRACE_CALLS, "256", "calls each communicator's flight recorder keeps (0: none)") \
  X(TRACE_FILE, "", "write the flight recorder here as JSON lines at destroy and on errors (%h host, %p pid, %r rank; empty: errors go to the log)") \
  X(TRACE_SIGNAL, "0", "1: SIGUSR1 writes every communicator's flight recorder") \
  X(RING_ORDER, "topo", "topo: rings keep each node's ranks adjacent; rank: rings follow rank order") \
  X(TOPO_FILE, "", "read this JSON topology instead of detecting the machine")                 \
  X(TOPO_DUMP_FILE, "", "write the topology in use to this JSON file (%h host, %p pid)")        \
  X(CACHE_DIR, "", "where the processes of a host share their topology probe (empty: $XDG_RUNTIME_DIR/tutti, else $XDG_CACHE_HOME/tutti or ~/.cache/tutti)") \
  X(NSOCKS_PERTHREAD, "1", "TCP sockets per helper thread (or per connection without threads)") \
  X(SOCKET_NTHREADS, "0", "helper threads per socket connection (0: the caller's thread moves the bytes)") \
  X(BUFFSIZE, "1048576", "bytes of staging buffer per connection and channel (NSTEPS chunks)")                 \
  X(NSTEPS, "8", "slots the staging buffer is split into (pipeline depth)")                     \
  X(P2P_DISABLE, "0", "1: never connect GPUs of one node directly (device calls then use shared memory or the network, through mapped host slots)") \
  X(P2P_BUFFSIZE, "33554432", "bytes of slots per device-call connection and channel (NSTEPS chunks): device memory for P2P, mapped host memory otherwise") \
  X(DEVICE_WORKER, "grid", "the device calls' worker kernel: grid (each block reads the host's queue) or lean (one thread reads it and hands each op to the grid; being measured, bench/results/gpu.md)") \
  X(EMULATE_DEVICE, "0", "N > 0: this process gets N emulated GPUs (memory and kernels on the CPU) to try and test the device path without one") \
  X(SPIN_COUNT, "2000", "polls of an idle connection before yielding the core (20 when ranks outnumber cores)")

