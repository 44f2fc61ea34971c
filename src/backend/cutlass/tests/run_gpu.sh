#!/bin/bash
# The cutlass backend's GPU run, on the GPU machine from the bundle pack_gpu.sh made: all of
# test_backend_cutlass (its GPU tests too), then the benchmark (C++ side, then PyTorch's).
# Logs and tables go to $OUT.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT" /tmp/cutlass_src
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
tar -C /tmp/cutlass_src -xJf cutlass_headers.tar.xz
# The target's cutlass_dir default is this machine's path: point the tests at the copy.
export PARTITA_TEST_CUTLASS_CACHE=$PWD/cache PARTITA_TEST_CUTLASS_DIR=/tmp/cutlass_src
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/env.log"
t0=$(date +%s)
# The GEMM units (CUTLASS 3 kernels, ~1 min of nvcc each) on this machine's cores, all at once;
# the glue of every test module was compiled before the run.
PARTITA_TEST_CUTLASS_PRECOMPILE=1 ./bin/test_backend_cutlass --gtest_filter=CutlassPrecompile.* 2>&1 \
  | tee "$OUT/precompile.log" | grep -E "cutlass precompile|OK|FAILED"
echo "units: $(( $(date +%s) - t0 )) s"
./bin/test_backend_cutlass --gtest_brief=1 2>&1 | tee "$OUT/tests.log" | tail -40
echo "tests: $(( $(date +%s) - t0 )) s"
PARTITA_CUTLASS_BENCH=1 PARTITA_CUTLASS_BENCH_OUT=$OUT/cutlass.tsv ./bin/test_backend_cutlass \
  --gtest_filter=CutlassBench.* 2>&1 | tail -5 | tee "$OUT/bench_cpp.log"
python3 bench_cutlass.py --cutlass "$OUT/cutlass.tsv" --out "$OUT/table.md" 2>&1 | tee "$OUT/bench.log"
cp cache/gemm_profile.tsv "$OUT/" 2>/dev/null || true
echo "total: $(( $(date +%s) - t0 )) s"
