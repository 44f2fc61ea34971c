#!/bin/bash
# The cutlass backend's GPU run, on the GPU machine from the bundle pack_gpu.sh made: the GEMM
# units not in the bundle's cache are compiled on the machine's cores (niced, in the background)
# while the GPU runs the epilogue micro-benchmark (when bundled) and PyTorch's side of the
# benchmark; then all of test_backend_cutlass (its GPU tests too) and the benchmark's C++ side.
# Logs and tables go to $OUT. PART=tests or PART=bench runs one half; default both.
# COMPILE_S bounds the compile (what it finished stays cached; the tests compile the rest).
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
only=""
[ "$PART" = tests ] && only=tests
[ "$PART" = bench ] && only=bench
(PARTITA_TEST_CUTLASS_PRECOMPILE=1 PARTITA_TEST_CUTLASS_PRECOMPILE_ONLY=$only timeout "${COMPILE_S:-150}" \
   nice ./bin/test_backend_cutlass --gtest_filter=CutlassPrecompile.* >> "$OUT/precompile.log" 2>&1
 echo "units: rc $? after $(( $(date +%s) - t0 )) s" >> "$OUT/precompile.log") &
compile_pid=$!
if [ "$PART" != tests ]; then
  [ -x epilogue_bench/epilogue_bench ] && SASS=0 OUT=$OUT bash epilogue_bench/run.sh > "$OUT/epilogue_bench.log" 2>&1
  grep -E "cublasLt +[0-9]|ct_relu|ct_gelu|rt_bn\(relu" "$OUT/epilogue_bench.log"
  python3 bench_cutlass.py --measure --torch-json "$OUT/torch.json" > "$OUT/torch.log" 2>&1
fi
wait $compile_pid
grep -E "cutlass precompile|units:|error" "$OUT/precompile.log" | head -5
if [ "$PART" != bench ]; then
  timeout "${TESTS_S:-120}" ./bin/test_backend_cutlass --gtest_filter=-CutlassBench.*:CutlassPrecompile.* 2>&1 \
    | tee "$OUT/tests.log" | grep -E "FAILED|PASSED|cutlass differential|Failure|error" | head -30
  echo "tests: $(( $(date +%s) - t0 )) s"
fi
[ "$PART" = tests ] && exit 0
PARTITA_CUTLASS_BENCH=1 PARTITA_CUTLASS_BENCH_OUT=$OUT/cutlass.tsv timeout "${BENCH_S:-120}" ./bin/test_backend_cutlass \
  --gtest_filter=CutlassBench.* > "$OUT/bench_cpp.log" 2>&1
tail -3 "$OUT/bench_cpp.log"
python3 bench_cutlass.py --cutlass "$OUT/cutlass.tsv" --torch-json "$OUT/torch.json" --out "$OUT/table.md" 2>&1 \
  | tee "$OUT/bench.log"
cp cache/gemm_profile.tsv "$OUT/" 2>/dev/null || true
echo "total: $(( $(date +%s) - t0 )) s"
# $OUT brings back at most 8 files: everything in one archive.
tar -C "$OUT" -cJf /tmp/cutlass_gpu_run.tar.xz . && find "$OUT" -mindepth 1 -delete && mv /tmp/cutlass_gpu_run.tar.xz "$OUT/"
