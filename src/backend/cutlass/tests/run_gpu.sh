#!/bin/bash
# The cutlass backend's GPU run, on the GPU machine from the bundle pack_gpu.sh made: all of
# test_backend_cutlass (its GPU tests too), then the benchmark (C++ side, then PyTorch's).
# Logs and tables go to $OUT. PART=tests or PART=bench runs one half (two calls of the GPU
# machine that each fit its time limit); default both.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT" /tmp/cutlass_src
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
tar -C /tmp/cutlass_src -xJf cutlass_headers.tar.xz
# The target's cutlass_dir default is this machine's path: point the tests at the copy.
export PARTITA_TEST_CUTLASS_CACHE=$PWD/cache PARTITA_TEST_CUTLASS_DIR=/tmp/cutlass_src
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/precompile.log"
PART=${PART:-all}
t0=$(date +%s)
# PyTorch's side of the benchmark while the CPUs compile (the GPU is idle then).
python3 bench_cutlass.py --measure --torch-json "$OUT/torch.json" > /tmp/torch.log 2>&1 &
torch_pid=$!
if [ "$PART" != bench ]; then
# The GEMM units (CUTLASS 3 kernels, ~1 min of nvcc each) on this machine's cores, all at once;
# the glue of every test module was compiled before the run.
PARTITA_TEST_CUTLASS_PRECOMPILE=1 ./bin/test_backend_cutlass --gtest_filter=CutlassPrecompile.* 2>&1 \
  | tee -a "$OUT/precompile.log" | grep -E "cutlass precompile|OK|FAILED"
echo "units: $(( $(date +%s) - t0 )) s"
./bin/test_backend_cutlass 2>&1 | tee "$OUT/tests.log" | grep -E "FAILED|cutlass differential|Failure|error" | head -30
echo "tests: $(( $(date +%s) - t0 )) s"
fi
[ "$PART" = tests ] && { wait $torch_pid; exit 0; }
PARTITA_CUTLASS_BENCH=1 PARTITA_CUTLASS_BENCH_OUT=$OUT/cutlass.tsv ./bin/test_backend_cutlass \
  --gtest_filter=CutlassBench.* 2>&1 | tail -5 | tee "$OUT/bench_cpp.log"
wait $torch_pid; cat /tmp/torch.log
python3 bench_cutlass.py --cutlass "$OUT/cutlass.tsv" --torch-json "$OUT/torch.json" --out "$OUT/table.md" 2>&1 \
  | tee "$OUT/bench.log"
cp cache/gemm_profile.tsv "$OUT/" 2>/dev/null || true
echo "total: $(( $(date +%s) - t0 )) s"
