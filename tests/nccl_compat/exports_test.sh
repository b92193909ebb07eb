#!/bin/sh
# Every function NVIDIA's nccl.h declares is exported by tutti's libnccl.so.2,
# and nothing but nccl* leaves it.  usage: exports_test.sh NCCL_H LIBNCCL
set -e
header=$1 lib=$2
declared=$(grep -oE '^(ncclResult_t|const char\*) +nccl[A-Za-z]+\(' "$header" | sed -E 's/.* (nccl[A-Za-z]+)\($/\1/' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | sort -u)
missing=$(printf '%s\n' "$declared" | grep -vxF "$exported" || true)
foreign=$(printf '%s\n' "$exported" | grep -v '^nccl' || true)
echo "nccl.h declares $(printf '%s\n' "$declared" | wc -l) functions; libnccl.so.2 exports $(printf '%s\n' "$exported" | wc -l)"
[ -z "$missing" ] || { echo "missing from $lib:"; echo "$missing"; exit 1; }
[ -z "$foreign" ] || { echo "exported but not NCCL's:"; echo "$foreign"; exit 1; }
echo "every declared function is exported"
