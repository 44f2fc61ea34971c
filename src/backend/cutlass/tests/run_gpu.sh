#!/bin/bash
# The cutlass backend's GPU run, on the GPU machine from the bundle pack_gpu.sh made: the GEMM
# units not in the bundle's cache are compiled on the machine's cores (niced, in the background)
# while the GPU runs the cuBLASLt and PyTorch sides of the benchmark; then the benchmark's C++
# side (CutlassBench.GemmsWithEpilogues) and all of test_backend_cutlass (its GPU tests too).
# Logs and tables go to $OUT, in one archive. PART=tests or PART=bench runs one half; default
# both; the objects compiled here come back in new_objects.tar.xz. COMPILE_S / BENCH_S / TESTS_S bound the three steps. ATTN_VARIANTS (e.g.
# "default,attention_schedule=persistent") adds the attention benchmark, bound by ATTN_S.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT" /tmp/cutlass_src
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
tar -C /tmp/cutlass_src -xJf cutlass_headers.tar.xz
# The target's cutlass_dir default is this machine's path: point the tests at the copy.
export PARTITA_TEST_CUTLASS_CACHE=$PWD/cache PARTITA_TEST_CUTLASS_DIR=/tmp/cutlass_src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/precompile.log"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu --format=csv,noheader -lms 500 \
  > "$OUT/clocks.csv" 2>&1 &
smi=$!
PART=${PART:-all}
t0=$(date +%s)
touch /tmp/cutlass_stamp
only=""
[ "$PART" = tests ] && only=tests
[ "$PART" = bench ] && only=bench
(PARTITA_TEST_CUTLASS_PRECOMPILE=1 PARTITA_TEST_CUTLASS_PRECOMPILE_ONLY=$only timeout "${COMPILE_S:-150}" \
   nice ./bin/test_backend_cutlass --gtest_filter=CutlassPrecompile.* >> "$OUT/precompile.log" 2>&1
 echo "units: rc $? after $(( $(date +%s) - t0 )) s" >> "$OUT/precompile.log") &
compile_pid=$!
if [ "$PART" != tests ]; then
  ./bin/lt_bench shapes.tsv > "$OUT/lt.tsv" 2> "$OUT/lt.log"
  echo "cuBLASLt: rc $? after $(( $(date +%s) - t0 )) s"
  python3 bench_cutlass.py --shapes shapes.tsv --measure --torch-json "$OUT/torch.json" > "$OUT/torch.log" 2>&1
  echo "torch: rc $? after $(( $(date +%s) - t0 )) s"
fi
wait $compile_pid
grep -E "cutlass precompile|units:|error" "$OUT/precompile.log" | head -5
if [ "$PART" != tests ]; then
  PARTITA_CUTLASS_BENCH=1 PARTITA_CUTLASS_BENCH_OUT=$OUT/cutlass.tsv timeout "${BENCH_S:-120}" \
    ./bin/test_backend_cutlass --gtest_filter=CutlassBench.GemmsWithEpilogues > "$OUT/bench_cpp.log" 2>&1
  echo "bench: rc $? after $(( $(date +%s) - t0 )) s"
  grep -E "^\[bench\]|Failure|FAILED|OK" "$OUT/bench_cpp.log" | head -8
  python3 bench_cutlass.py --shapes shapes.tsv --torch-json "$OUT/torch.json" --cutlass "$OUT/cutlass.tsv" \
    --lt "$OUT/lt.tsv" --out "$OUT/table.md" 2>&1 | tee "$OUT/bench.log"
fi
# Attention at BERT-base's shapes: each variant of ATTN_VARIANTS (target options, as
# CutlassBench.AttentionBertShapes reads them) against PyTorch's SDPA.
if [ -n "${ATTN_VARIANTS:-}" ]; then
  PARTITA_CUTLASS_BENCH=1 PARTITA_CUTLASS_ATTENTION_VARIANTS=$ATTN_VARIANTS timeout "${ATTN_S:-120}" \
    ./bin/test_backend_cutlass --gtest_filter=CutlassBench.AttentionBertShapes > "$OUT/attention_cpp.log" 2>&1
  echo "attention: rc $? after $(( $(date +%s) - t0 )) s"
  grep -E "^\[attention\]|Failure" "$OUT/attention_cpp.log" | head -20
  python3 bench_attention.py 2>&1 | tee "$OUT/attention_sdpa.log"
fi
if [ "$PART" != bench ]; then
  timeout "${TESTS_S:-120}" ./bin/test_backend_cutlass --gtest_filter=-CutlassBench.*:CutlassPrecompile.* 2>&1 \
    | tee "$OUT/tests.log" | grep -E "FAILED|PASSED|cutlass differential|Failure|error" | head -30
  echo "tests: $(( $(date +%s) - t0 )) s"
fi
kill $smi 2>/dev/null
# The objects compiled here come back for the next bundle (pack_gpu.sh takes build/cutlass_cache).
(cd cache && find . -maxdepth 1 -newer /tmp/cutlass_stamp \( -name '*.o' -o -name '*.cu' -o -name '*.tsv' \) \
   | tar -cJf "$OUT/new_objects.tar.xz" -T -)
echo "total: $(( $(date +%s) - t0 )) s"
# $OUT brings back at most 8 files: everything in one archive.
tar -C "$OUT" -cJf /tmp/cutlass_gpu_run.tar.xz . && find "$OUT" -mindepth 1 -delete && mv /tmp/cutlass_gpu_run.tar.xz "$OUT/"
