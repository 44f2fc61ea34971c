#!/usr/bin/env bash
# The differential tests against apache-tvm (docs/tvm-oracle.md), reproducibly:
#   1. .deps/tvm-venv: a virtual environment of Debian's /usr/bin/python3 that sees the system's
#      packages (numpy, pytest) and holds apache-tvm from PyPI — made once, test-only, never
#      needed by the build or CI (the oracle tests skip with a message where tvm is missing);
#   2. the oracle tests run in it against this tree's build (build/python).
# Environment: TVM_VENV (another venv that already has apache-tvm), TVM_VERSION (the pip
# requirement, default "apache-tvm"), PARTITA_ORACLE_MODULES / PARTITA_ORACLE_PROBLEMS (counts),
# BUILD_DIR (default build). Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${TVM_VENV:-$root/.deps/tvm-venv}"
build="${BUILD_DIR:-$root/build}"
if [[ ! -x "$venv/bin/python" ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/python" -m pip install --quiet "${TVM_VERSION:-apache-tvm}"
fi
"$venv/bin/python" -c 'import tvm; print("apache-tvm", tvm.__version__, "from", tvm.__file__)'
if [[ ! -d "$build/python/partita" ]]; then
  echo "no Partita Python package in $build/python: build the tree first (see README)" >&2
  exit 1
fi
cd "$root"
PYTHONPATH="$build/python:$root/tests/python" exec "$venv/bin/python" -m pytest -q -rP -p no:cacheprovider \
  tests/python/test_tvm_oracle_script.py tests/python/test_tvm_oracle_partition.py \
  tests/python/test_vdevice_tvm_oracle.py "$@"
