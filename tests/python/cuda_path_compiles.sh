#!/usr/bin/env bash
# The backend's path for CUDA tensors (TUTTI_TORCH_CUDA: the caller's stream,
# the Work's event) is built only against a PyTorch with CUDA, which this
# machine may not have. This compiles every backend source with it on,
# against the installed torch's headers (c10/cuda ships with them) and the
# CUDA toolkit's, so that the path is at least compiled here.
#   cuda_path_compiles.sh PYTHON CUDA_INCLUDE_DIR
set -euo pipefail
python=${1:?usage: cuda_path_compiles.sh PYTHON CUDA_INCLUDE_DIR}
cuda_include=${2:?}
root=$(cd "$(dirname "$0")/../.." && pwd)
flags=$("$python" - <<'PY'
import sysconfig
from torch.utils.cpp_extension import include_paths
print(" ".join("-I" + p for p in include_paths() + [sysconfig.get_paths()["include"]]))
PY
)
if [ ! -f "$cuda_include/cuda_runtime_api.h" ]; then
  echo "SKIP: no CUDA headers in $cuda_include"; exit 77
fi
torch_include=$("$python" -c 'from torch.utils.cpp_extension import include_paths; print(include_paths()[0])')
if [ ! -f "$torch_include/c10/cuda/CUDAStream.h" ]; then
  echo "SKIP: this torch ships no c10/cuda headers"; exit 77
fi
# A torch built without CUDA lacks the one header CUDA's build generates;
# what it holds in a CUDA build of torch:
stand_in=$(mktemp -d)
trap 'rm -rf "$stand_in"' EXIT
if [ ! -f "$torch_include/c10/cuda/impl/cuda_cmake_macros.h" ]; then
  mkdir -p "$stand_in/c10/cuda/impl"
  echo '#define C10_CUDA_BUILD_SHARED_LIBS' > "$stand_in/c10/cuda/impl/cuda_cmake_macros.h"
fi
for src in "$root"/python/csrc/*.cpp; do
  c++ -fsyntax-only -std=c++17 -Wall -Wno-deprecated-declarations -Wno-unused-parameter \
    -DTUTTI_TORCH_CUDA=1 -DTORCH_EXTENSION_NAME=_C $flags -I"$stand_in" -I"$cuda_include" \
    -I"$root/include" -I"$root" -I"$root/python/csrc" "$src"
  echo "compiled with TUTTI_TORCH_CUDA: ${src#$root/}"
done
