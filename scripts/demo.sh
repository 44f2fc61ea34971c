#!/usr/bin/env bash
# Sets up, builds, and runs the main job: the seed tutorial's module, built with the
# BlockBuilder, partitioned through both composite paths, printed, and round-tripped through
# the text format.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
./build/partita_demo
