#!/bin/sh
# Compiles every source of the PyTorch backend (python/csrc), with and
# without its CUDA path, against the headers of a PyTorch 2.x taken from
# Debian's archive (sid's libtorch-dev, unpacked under a cache folder, not
# installed): the 2.x Backend surface is checked where only Debian 12's
# torch 1.13 is installed. Needs Debian's archive and CUDA's headers.
#   scripts/check-torch2-headers.sh [SUITE]        (default: sid)
set -eu
suite=${1:-sid}
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${TUTTI_TORCH2_CACHE:-$root/build/torch2-headers}
mirror=http://deb.debian.org/debian
mkdir -p "$cache"
file=$(curl -sf "$mirror/dists/$suite/main/binary-amd64/Packages.xz" | xz -dc |
  awk '/^Package: /{p=$2} p=="libtorch-dev" && /^Filename: /{print $2; exit}')
[ -n "$file" ] || { echo "no libtorch-dev in $suite"; exit 1; }
deb=$cache/$(basename "$file")
[ -f "$deb" ] || curl -sf -o "$deb" "$mirror/$file"
headers=$cache/$(basename "$file" .deb)
[ -d "$headers" ] || dpkg-deb -x "$deb" "$headers"
inc=$headers/usr/include
version=$(cat "$inc"/torch/csrc/api/include/torch/version.h "$inc"/torch/headeronly/version.h 2>/dev/null |
  sed -n 's/^#define TORCH_VERSION_\(MAJOR\|MINOR\) \([0-9]*\)$/\2/p' | paste -sd.)
# What a CUDA build of torch generates and the packaged headers lack.
mkdir -p "$cache/stand-in/c10/cuda/impl"
echo '#define C10_CUDA_BUILD_SHARED_LIBS' > "$cache/stand-in/c10/cuda/impl/cuda_cmake_macros.h"
python_include=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
for src in "$root"/python/csrc/*.cpp; do
  for cuda in "" "-DTUTTI_TORCH_CUDA=1"; do
    c++ -fsyntax-only -std=c++20 -Wall -Wno-deprecated-declarations -Wno-unused-parameter $cuda \
      -DTORCH_EXTENSION_NAME=_C -I"$inc" -I"$inc/torch/csrc/api/include" -I"$cache/stand-in" \
      -I/usr/local/cuda/include -I"$python_include" -I"$root/include" -I"$root" -I"$root/python/csrc" "$src"
  done
  echo "compiled against torch $version (with and without TUTTI_TORCH_CUDA): ${src#$root/}"
done
