#!/usr/bin/env bash
# Prepares the GPU check (scripts/gpu/check.sh) on a machine with the
# package archive, so no minute of a lent GPU goes to compiling tutti:
#   1. builds tutti for Hopper (sm_90) into ${BUILD_DIR:-build-gpu};
#   2. builds nccl-tests against NVIDIA's nccl.h (CUDA's), with Open MPI for
#      several ranks, when its source is in .device/nccl-tests;
#   3. downloads (does not install) the .debs the GPU machine lacks: the
#      libraries tutti's programs load, and Open MPI's runtime for nccl-tests;
#   4. copies what the check runs into .device/stage (small: the 64 MiB a
#      device call may carry).
# Then carry .device (git ignores it) and run scripts/gpu/check.sh there;
# docs/gpu-check.md has the exact call.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build-gpu}
stage=.device/stage
t0=$SECONDS

scripts/install-deps.sh
# nccl-tests with several ranks needs mpi.h (libopenmpi-dev); mpirun is already there.
if ! dpkg-query -W -f='${Status}' libopenmpi-dev 2>/dev/null | grep -q 'ok installed'; then
  apt-get -o DPkg::Lock::Timeout=900 update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libopenmpi-dev >&2
fi

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUTTI_ENABLE_CUDA=ON \
  -DTUTTI_CUDA_ARCHS=90 -DTUTTI_BUILD_PYTHON=OFF >/dev/null
cmake --build "$build" -j "$(nproc)"
echo "prepare: tutti for sm_90 built in $((SECONDS - t0)) s" >&2

if [ -f .device/nccl-tests/src/Makefile ]; then
  t1=$SECONDS
  make -s -C .device/nccl-tests/src -j "$(nproc)" MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi \
    CUDA_HOME=/usr/local/cuda NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR=../build \
    ../build/all_reduce_perf ../build/all_gather_perf ../build/broadcast_perf ../build/reduce_scatter_perf
  echo "prepare: nccl-tests built in $((SECONDS - t1)) s" >&2
else
  echo "prepare: no nccl-tests source in .device/nccl-tests: the check will skip NVIDIA's clients" >&2
fi

# Debian 12's packages, downloaded for a machine that has no archive.
debs=(libhwloc15 libudev1 libnuma1 libucx0 libibverbs1 librdmacm1 libltdl7 libbenchmark1debian
      libnl-3-200 libnl-route-3-200
      openmpi-bin openmpi-common libopenmpi3 libpmix2 libevent-core-2.1-7 libevent-pthreads-2.1-7
      libfabric1 libpsm2-2 libpsm-infinipath1 libmunge2 libxnvctrl0 ocl-icd-libopencl1 libpciaccess0)
mkdir -p .device/debs
(cd .device/debs && apt-get -qq download "${debs[@]}" 2>&1 | grep -v 'unsandboxed' || true)

rm -rf "$stage" && mkdir -p "$stage/tests" "$stage/bench" "$stage/nccl" "$stage/nccl-tests"
cp -a "$build"/libtutti.so* "$stage/"
cp -a "$build"/nccl/libnccl.so* "$stage/nccl/"
cp "$build"/tests/{gpu_test,errors_test} "$stage/tests/"
cp "$build"/bench/{tutti-perf,cuda-kernels-bench} "$build"/tutti-info "$stage/bench/"
for t in all_reduce all_gather broadcast reduce_scatter; do
  f=.device/nccl-tests/build/${t}_perf
  [ -x "$f" ] && cp "$f" "$stage/nccl-tests/"
done
strip --strip-unneeded "$stage"/tests/* "$stage"/bench/* 2>/dev/null || true
du -sh .device/stage .device/debs >&2
echo "prepare: done in $((SECONDS - t0)) s; carry .device (and nothing else) to the GPU" >&2
