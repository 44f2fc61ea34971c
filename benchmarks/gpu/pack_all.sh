#!/usr/bin/env bash
# One bundle for a device call that runs the GPU suites and the benchmarks: benchmarks/gpu/pack.sh's
# folder plus tests/gpu/pack.sh's test programs, their run script and the NVRTC kernel cache
# (filled here, xz-compressed: 44 MB -> 10 MB, so the bundle stays under the device tool's 64 MiB).
#
#   bash benchmarks/gpu/pack_all.sh [build dir] [bundle dir]    (defaults: build, .gpu_all)
#
# On the GPU machine (device tool, carry=[".gpu_all"]):
#   cd .gpu_all && bash run.sh                        # the three suites (tests/gpu/run.sh)
#   cd .gpu_all && MODELS=... bash gpu/run_all.sh     # the benchmark, as benchmarks/gpu/pack.sh's
# The device tool returns at most 8 files: tar what a call writes under $OUT into one.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
out="${2:-.gpu_all}"
bash benchmarks/gpu/pack.sh "$build" "$out" > /dev/null
suite=$(mktemp -d)
bash tests/gpu/pack.sh "$suite/s" "$build" > /dev/null
mv "$suite/s/bin" "$suite/s/run.sh" "$out/"
tar cJf "$out/cache.tar.xz" -C "$suite/s" cache
rm -rf "$suite"
strip --strip-unneeded "$out"/lib/libpartita*.so "$out/partita"
du -sh "$out"
