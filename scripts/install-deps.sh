#!/usr/bin/env bash
# Installs, from Debian 12's archive, whatever tutti's build and tests need
# and this machine lacks. Run as root (or with sudo available).
#   --list   prints the package list, one a line, and installs nothing
#            (scripts/check-deps.py checks the build against it).
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libhwloc-dev hwloc googletest libgtest-dev
          libbenchmark-dev iproute2 python3
          libucx-dev ucx-utils libibverbs-dev   # UCX transport; verbs headers (the library is dlopened)
          python3-torch libtorch-dev python3-dev python3-setuptools  # the torch.distributed backend
          pybind11-dev                          # torch's extension headers include pybind11's
          python3-matplotlib                    # bench/plot.py draws the figures
          openmpi-bin)                          # mpirun, one of the launchers tests/launchers checks
if [[ ${1:-} == --list ]]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "installing: ${missing[*]}" >&2
sudo=""
[[ $(id -u) -ne 0 ]] && sudo=sudo
$sudo apt-get -o DPkg::Lock::Timeout=900 update -q >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=900 install -y -q \
  --no-install-recommends "${missing[@]}" >&2
