#!/usr/bin/env bash
# Makes the Python environment the PyTorch backend is built and tested in:
# a virtual environment (${TUTTI_VENV:-.venv}) of Debian's python3, holding
# exactly the packages python/requirements.txt pins, each with its hash, from
# PyPI. Run again, it installs nothing unless the pins changed.
#   --pin   resolves python/requirements.in anew and rewrites requirements.txt
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${TUTTI_VENV:-$PWD/.venv}
pins=python/requirements.txt

if [[ ${1:-} == --pin ]]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  /usr/bin/python3 -m venv "$scratch/venv"
  "$scratch/venv/bin/pip" install -q --dry-run --ignore-installed \
    --report "$scratch/report.json" -r python/requirements.in
  /usr/bin/python3 - "$scratch/report.json" > "$pins" <<'PY'
import json, sys
print("# Written by scripts/make-venv.sh --pin from python/requirements.in: every package\n"
      "# of the environment, pinned with the hash of the file PyPI served for\n"
      "# Linux x86_64 and CPython 3.11.")
for item in sorted(json.load(open(sys.argv[1]))["install"], key=lambda i: i["metadata"]["name"].lower()):
    digest = item["download_info"]["archive_info"]["hashes"]["sha256"]
    print(f'{item["metadata"]["name"]}=={item["metadata"]["version"]} \\\n    --hash=sha256:{digest}')
PY
  echo "wrote $pins"
  exit 0
fi

stamp=$venv/.tutti-pins
if [[ -x $venv/bin/python ]] && cmp -s "$pins" "$stamp"; then
  exit 0
fi
echo "making $venv from $pins (PyPI; PyTorch with its CUDA libraries is about 5 GB)" >&2
/usr/bin/python3 -m venv --clear "$venv"
"$venv/bin/pip" install -q --no-input --disable-pip-version-check --require-hashes -r "$pins" >&2
cp "$pins" "$stamp"
