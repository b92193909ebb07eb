#!/bin/bash
# stop71_libs.sh ROUNDS LIB_A LIB_B [VAR=VALUE...]: two builds of libtutti
# (directories holding libtutti.so.0) alternated on 4 x 1 nodes, 1-64 MiB,
# each launch with an empty cache; init's time from TUTTI_DEBUG=INFO.
here=$(dirname "$0")
rounds=$1 a=$2 b=$3; shift 3
for r in $(seq 1 "$rounds"); do
  for lib in "$a" "$b"; do
    "$here/stop71_launch.sh" 4 1 /tmp/stop71.out LD_LIBRARY_PATH=$lib TUTTI_DEBUG=INFO TUTTI_DEBUG_SUBSYS=INIT "$@" \
      build/bench/tutti-perf -b 1M -e 64M -f 4 -n 8 -w 2 -c 0
    init=$(grep -ho "init done in [0-9.]* ms" /tmp/stop71.out /tmp/stop71.out.err | head -1)
    echo "$lib ($init): $(grep -E '^ +[0-9]' /tmp/stop71.out | awk '{printf "%sM %s us %s GB/s %s; ", $1/1048576, $6, $8, $(NF-3)}')"
  done
done
