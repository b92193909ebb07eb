#!/usr/bin/env bash
# Installs tutti into a scratch prefix, then builds outside programs against
# it with find_package(tutti) and with pkg-config, and runs them.
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TUTTI_SOCKET_IFNAME=lo

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/tutti/tutti.h"
test -x "$work/prefix/bin/tutti-info"
test -x "$work/prefix/bin/tutti-perf"
libdir=$(dirname "$(find "$work/prefix" -name libtutti.so | head -1)")

# CMake package.
cmake -S "$source_dir/tests/install/cmake_consumer" -B "$work/consumer" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/consumer/consumer_c"
LD_LIBRARY_PATH="$libdir" "$work/consumer/consumer_cxx"

# pkg-config, strict C99.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c99 -pedantic -Wall -Werror "$source_dir/tests/install/consumer.c" -o "$work/pc_consumer" \
  $(pkg-config --cflags --libs tutti)
LD_LIBRARY_PATH="$libdir" "$work/pc_consumer"

# Only the C API leaves the library.
if nm -D --defined-only "$libdir/libtutti.so" | awk '{print $3}' | grep -v '^tutti' | grep -q .; then
  echo "libtutti.so exports symbols other than tutti*:" >&2
  nm -D --defined-only "$libdir/libtutti.so" | awk '{print $3}' | grep -v '^tutti' >&2
  exit 1
fi
echo "install test passed"
