#!/bin/sh
# Every function NVIDIA's nccl.h (and nccl_device/*.h beside it) declares is
# exported by tutti's libnccl.so.2, and so is every nccl* function NVIDIA's
# own libnccl.so.2 exports where one is given (a program linked against it
# may name any of them: PyTorch 2.11 links ncclDevCommDestroy); nothing but
# nccl* leaves tutti's.  usage: exports_test.sh NCCL_H LIBNCCL [NVIDIA_LIBNCCL]
set -e
header=$1 lib=$2 nvidia=${3:-}
device_headers=$(ls "$(dirname "$header")"/nccl_device/*.h 2>/dev/null || true)
declared=$( (grep -hoE '^(ncclResult_t|const char\*) +nccl[A-Za-z0-9]+\(' "$header";
             [ -z "$device_headers" ] || grep -hoE '^NCCL_EXTERN_C __host__ [A-Za-z_]+ +nccl[A-Za-z0-9]+\(' $device_headers) |
           sed -E 's/.* (nccl[A-Za-z0-9]+)\($/\1/' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | sort -u)
if [ -n "$nvidia" ] && [ -f "$nvidia" ]; then
  theirs=$(nm -D --defined-only "$nvidia" | awk '($2 == "T" || $2 == "W") && $3 ~ /^nccl/ {print $3}' | sort -u)
  declared=$(printf '%s\n%s\n' "$declared" "$theirs" | sort -u)
fi
missing=$(printf '%s\n' "$declared" | grep -vxF "$exported" || true)
foreign=$(printf '%s\n' "$exported" | grep -v '^nccl' || true)
echo "NCCL declares or exports $(printf '%s\n' "$declared" | wc -l) functions; tutti's libnccl.so.2 exports $(printf '%s\n' "$exported" | wc -l)"
[ -z "$missing" ] || { echo "missing from $lib:"; echo "$missing"; exit 1; }
[ -z "$foreign" ] || { echo "exported but not NCCL's:"; echo "$foreign"; exit 1; }
echo "every declared function is exported"
