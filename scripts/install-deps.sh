#!/usr/bin/env bash
# Installs, from Debian 12's archive, whatever tutti's build and tests need
# and this machine lacks, then the PyTorch backend's Python environment from
# PyPI (scripts/make-venv.sh). Run as root (or with sudo available).
#   --list   prints the Debian package list, one a line, and installs nothing
#            (scripts/check-deps.py checks the build against it).
#   --debian installs Debian's packages only, not the Python environment.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libhwloc-dev hwloc googletest libgtest-dev
          libbenchmark-dev nlohmann-json3-dev iproute2 python3
          libucx-dev ucx-utils libibverbs-dev   # UCX transport; verbs headers (the library is dlopened)
          python3-dev python3-venv              # the torch.distributed backend (PyTorch: scripts/make-venv.sh)
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
if ((${#missing[@]} > 0)); then
  echo "installing: ${missing[*]}" >&2
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo=sudo
  $sudo apt-get -o DPkg::Lock::Timeout=900 update -q >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=900 install -y -q \
    --no-install-recommends "${missing[@]}" >&2
fi
[[ ${1:-} == --debian ]] || "$(dirname "$0")/make-venv.sh"
