#!/usr/bin/env bash
# Fetches the header-only CUDA libraries NVIDIA publishes on PyPI (CUTLASS, the cuDNN frontend)
# into a virtual environment at .deps/venv, for the GPU backends' builds. Only headers are used,
# so the wheels are installed without their Python dependencies. Does nothing without the CUDA
# toolkit (the CPU-only build needs neither) or when the pinned versions are already there.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || exit 0
venv=.deps/venv
read -r -d '' -a wheels < scripts/cuda_headers.txt || true  # name==version, one per line
stamp="$venv/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${wheels[*]}" ]; then exit 0; fi
echo "== fetching CUDA header libraries from PyPI: ${wheels[*]}"
[ -x "$venv/bin/pip" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --no-deps "${wheels[@]}"
echo "${wheels[*]}" > "$stamp"
