#!/usr/bin/env bash
# Runs on the GPU machine (see pack_cudnn.sh): the cudnn backend's GPU tests, the differential
# test over random graphs, then the benchmark (Partita's side, then PyTorch's on the same shapes).
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH="$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
OUT="${OUT:-$PWD/out}"; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; date -u;
  ls -l /usr/lib/x86_64-linux-gnu/libcudnn.so.9* 2>/dev/null; } > "$OUT/machine.txt" 2>&1
t() { local s=$SECONDS; "$@"; echo "[exit $? after $((SECONDS - s)) s]"; }
t timeout "${TESTS_S:-50}" ./bin/test_backend_cudnn --gtest_filter='-CudnnGpu.DifferentialRandomGraphs:CudnnPerf.*' \
  > "$OUT/tests.log" 2>&1; tail -1 "$OUT/tests.log"
PARTITA_CUDNN_SECONDS="${DIFF_BUDGET_S:-50}" t timeout "${DIFF_S:-60}" ./bin/test_backend_cudnn --gtest_filter='CudnnGpu.DifferentialRandomGraphs' \
  > "$OUT/differential.log" 2>&1; tail -1 "$OUT/differential.log"; grep -c "Failure" "$OUT/tests.log" "$OUT/differential.log"
[ "${BENCH:-1}" = 1 ] || exit 0
PARTITA_CUDNN_BENCH="$OUT/partita.json" t timeout "${PERF_S:-35}" ./bin/test_backend_cudnn \
  --gtest_filter='CudnnPerf.*' > "$OUT/perf.log" 2>&1
t timeout "${TORCH_S:-30}" python3 bench_cudnn.py "$OUT/partita.json" "$OUT/bench.json" > "$OUT/bench.md" 2>&1
