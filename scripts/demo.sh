#!/usr/bin/env bash
# Sets up, builds, and runs the main job: the seed tutorial's module, built with the
# BlockBuilder, partitioned for the C-source backend through both composite paths, printed,
# built, exported to one file each, and run — in this process and then in a fresh process
# linked against the runtime library alone.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out=build/demo
mkdir -p "$out"
./build/partita_demo "$out"
for path in 1 2; do
  echo "== fresh process, runtime library only: path $path"
  ./build/partita_run_min "$out/seed_path$path.partita" main float32:10x10 float32:10x10 | head -3
done
