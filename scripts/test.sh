#!/usr/bin/env bash
# Sets up, builds, and runs every test: the C++ tests (ctest) and the Python tests (pytest),
# which include the conformance cases in ../shared/conformance/cases.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== C++ tests (ctest)"
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600

echo "== Python tests (pytest)"
# pytest exits 5 when no test ran; with set -e that fails the run, as it should.
PYTHONPATH=build/python /usr/bin/python3 -m pytest -q tests/python
