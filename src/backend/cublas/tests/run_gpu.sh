#!/bin/bash
# On the GPU machine, from the folder pack_gpu.sh made: the cublas GPU tests and differential
# test, the seed artifacts reloaded by a fresh `partita run -d cuda`, and the GEMM benchmark
# against torch. Logs and results go to $OUT (results.tgz); the summary is printed last.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64 PARTITA_TEST_CUDA_CACHE=$PWD/cache
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/logs/gpu.txt" 2>&1
timeout 200 ./bin/test_backend_cublas --gtest_filter=-CublasBench.* > "$OUT/logs/gtest.log" 2>&1
echo "gtest rc=$?" >> "$OUT/logs/gtest.log"
for a in seed seed_with_product; do
  rm -rf "out_$a"
  timeout 60 ./bin/partita run "artifacts/$a.ptx" -d cuda -i "x=artifacts/${a}_x.npy" -i "y=artifacts/${a}_y.npy" \
    --output-dir "out_$a" -n 3 > "$OUT/logs/run_$a.log" 2>&1
  echo "partita run rc=$?" >> "$OUT/logs/run_$a.log"
  python3 -c "import numpy as np, sys; g=np.load('out_$a/output_0.npy'); w=np.load('artifacts/${a}_expected.npy'); \
np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5); print('$a: matches', g.shape)" >> "$OUT/logs/run_$a.log" 2>&1
done
timeout 150 python3 bench_cublas_gemm.py --partita ./bin/test_backend_cublas --out "$OUT/logs/bench.json" \
  > "$OUT/logs/bench.md" 2> "$OUT/logs/bench.err"
echo "bench rc=$?" >> "$OUT/logs/bench.md"
tar czf "$OUT/results.tgz" -C "$OUT" logs
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  |STATS|gtest rc" "$OUT/logs/gtest.log" | head -40
tail -n 3 "$OUT"/logs/run_*.log
cat "$OUT/logs/bench.md"
tail -n 5 "$OUT/logs/bench.err"
