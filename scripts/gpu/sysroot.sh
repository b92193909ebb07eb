#!/usr/bin/env bash
# sysroot.sh DEBS_DIR [PREFIX]: unpacks every .deb of DEBS_DIR under PREFIX
# (default /opt/tutti-sysroot; never into /) and prints the exports that let
# programs load its libraries and Open MPI find itself there:
#   eval "$(bash scripts/gpu/sysroot.sh .device/debs)"
set -euo pipefail
dir=${1:?usage: sysroot.sh DEBS_DIR [PREFIX]}
prefix=${2:-/opt/tutti-sysroot}
mkdir -p "$prefix"
for f in "$dir"/*.deb; do dpkg -x "$f" "$prefix"; done
lib=$prefix/usr/lib/x86_64-linux-gnu
cat <<OUT
export LD_LIBRARY_PATH=$lib:$lib/openmpi/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PATH=\$PATH:$prefix/usr/bin
export OPAL_PREFIX=$prefix/usr
export UCX_MODULE_DIR=$lib/ucx
OUT
