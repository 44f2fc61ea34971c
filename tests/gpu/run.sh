#!/bin/bash
# On the GPU machine, from the folder pack.sh made: the cuda, cublas and cudnn GPU suites
# (benchmarks and throughput tests left out). Logs go to $OUT/logs; a summary is printed.
set -u
cd "$(dirname "$0")"
# benchmarks/gpu/pack_all.sh ships the kernel cache compressed.
[ -d cache ] || [ ! -f cache.tar.xz ] || tar xJf cache.tar.xz
# The device tool runs this in a copy of the checkout: the tree (models/) is the parent folder.
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64 PARTITA_TEST_CUDA_CACHE=$PWD/cache PARTITA_TEST_SOURCE_DIR=$(cd .. && pwd)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/logs/gpu.txt" 2>&1
for t in cuda cublas cudnn; do
  timeout 100 ./bin/test_backend_$t --gtest_filter=-*Bench*:*Perf*:*Throughput* > "$OUT/logs/$t.log" 2>&1
  echo "rc=$?" >> "$OUT/logs/$t.log"
done
tar czf "$OUT/logs.tgz" -C "$OUT" logs
cat "$OUT/logs/gpu.txt"
for t in cuda cublas cudnn; do
  echo "== $t"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|^rc=" "$OUT/logs/$t.log" | head -20
done
