#!/usr/bin/env bash
# Installs Partita's dependencies (Debian packages) and builds it into build/.
# Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# The Debian packages Partita needs (one list, shared with .ci/run).
read -r -d '' -a packages < scripts/packages.txt || true  # whitespace-separated names
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "== installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# CUTLASS and the cuDNN frontend headers (PyPI), when the CUDA toolkit is here.
bash scripts/fetch_cuda_headers.sh

echo "== building into build/"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPYTHON_EXECUTABLE=/usr/bin/python3 >/dev/null
ninja -C build -j"$(nproc)"
