#!/bin/bash
# A shorter GPU call than run_gpu.sh (from the bundle pack_gpu.sh made): the epilogue
# micro-benchmark while the benchmark's GEMM units compile on the machine's cores, then the
# benchmark's C++ side; the objects it compiled come back in $OUT (new_objects.tar.xz) for the
# next call's bundle.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT" /tmp/cutlass_src
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tar -C /tmp/cutlass_src -xJf cutlass_headers.tar.xz
export PARTITA_TEST_CUTLASS_CACHE=$PWD/cache PARTITA_TEST_CUTLASS_DIR=/tmp/cutlass_src
t0=$(date +%s)
touch /tmp/stamp
(PARTITA_TEST_CUTLASS_PRECOMPILE=1 PARTITA_TEST_CUTLASS_PRECOMPILE_ONLY=${ONLY:-bench} timeout ${COMPILE_S:-120} \
   nice ./bin/test_backend_cutlass --gtest_filter=CutlassPrecompile.* > "$OUT/precompile.log" 2>&1
 echo "precompile rc $? after $(( $(date +%s) - t0 )) s" >> "$OUT/precompile.log") &
pc=$!
[ -x epilogue_bench/epilogue_bench ] && OUT=$OUT bash epilogue_bench/run.sh
wait $pc
grep -E "cutlass precompile|rc |error" "$OUT/precompile.log" | head
PARTITA_CUTLASS_BENCH=1 PARTITA_CUTLASS_BENCH_OUT=$OUT/cutlass.tsv timeout ${BENCH_S:-50} ./bin/test_backend_cutlass \
  --gtest_filter=CutlassBench.GemmsWithEpilogues > "$OUT/bench_cpp.log" 2>&1
echo "bench rc $? after $(( $(date +%s) - t0 )) s"
cut -f1,6-10 "$OUT/cutlass.tsv"
cp cache/gemm_profile.tsv "$OUT/" 2>/dev/null
(cd cache && find . -maxdepth 1 -newer /tmp/stamp \( -name '*.o' -o -name '*.cu' \) | tar -cJf "$OUT/new_objects.tar.xz" -T -)
ls -la "$OUT"
