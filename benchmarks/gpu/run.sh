#!/usr/bin/env bash
# The GPU benchmark, run ON the GPU machine from a bundle made by pack.sh: exports each model
# with the machine's PyTorch (models.py), compiles it for `--target cuda` (generated kernels
# alone, no BYOC backend), runs the exported artifact in a fresh process on cuda:0 (median of
# N after warm-up, each run synchronized), checks the output against PyTorch's (fp32, TF32 off)
# and times PyTorch eager (and torch.compile with COMPILE=1) on the same input in the same call.
#
#   cd .gpu_bench && MODELS=resnet50,mlp BATCH=1,32 DTYPES=float32,float16 COMPILE=1 bash gpu/run.sh
#   (logs and results in $OUT; float16 models are exported from .half() on the GPU)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT" /tmp/gpu_models
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
MODELS=${MODELS:-mlp,resnet50,mobilenet_v2,bert_base}
BATCH=${BATCH:-1}
RUNS=${RUNS:-50}
DTYPES=${DTYPES:-float32}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/env.log"
python3 gpu/models.py --out /tmp/gpu_models --only "$MODELS" --batch "$BATCH" --dtype "$DTYPES" 2>&1 \
  | grep -v -i warn | tee "$OUT/export.log"
for m in ${MODELS//,/ }; do
  for b in ${BATCH//,/ }; do
   for dt in ${DTYPES//,/ }; do
    sfx=; [ "$dt" = float16 ] && sfx=_fp16
    tag=${m}_b$b$sfx
    stem=/tmp/gpu_models/$tag
    [ -f "$stem.onnx" ] || continue
    t0=$(date +%s.%N)
    if ! ./partita compile "$stem.onnx" --target cuda -o "$stem.partita" > "$OUT/$tag.compile.log" 2>&1; then
      echo "$tag: compile FAILED: $(tail -1 "$OUT/$tag.compile.log")" | tee -a "$OUT/results.txt"
      continue
    fi
    t1=$(date +%s.%N)
    ./partita run "$stem.partita" --device cuda --input "input=$stem.input.npy" --repeat "$RUNS" \
      --warmup 10 --output-dir "$stem.out" > "$OUT/$tag.run.log" 2>&1 \
      || { echo "$tag: run FAILED: $(tail -1 "$OUT/$tag.run.log")" | tee -a "$OUT/results.txt"; continue; }
    python3 - "$m" "$b" "$dt" "$stem" "$t0" "$t1" "$OUT/$tag.run.log" "$OUT/$tag.compile.log" <<'PY' | tee -a "$OUT/results.txt"
import re, sys
import numpy as np
m, b, dt, stem, t0, t1, log, clog = sys.argv[1:]
got = np.load(stem + ".out/output_0.npy").astype(np.float32)
ref = np.load(stem + ".ref.npy")
err = float(np.max(np.abs(got - ref)) / max(float(np.max(np.abs(ref))), 1e-30))
med = re.search(r"median ([0-9.]+) ms", open(log).read()).group(1)
where = re.search(r"\((.*); [0-9.]+ [KM]?i?B\)", open(clog).read())
print("%-14s b%-3s %-8s partita-cuda median %8s ms  compile %.1f s  max rel err vs PyTorch %.2e  [%s]" % (
    m, b, dt, med, float(t1) - float(t0), err, where.group(1) if where else "?"))
PY
   done
  done
done
COMPILE_FLAG=--no-compile; [ "${COMPILE:-0}" = 1 ] && COMPILE_FLAG=
python3 gpu/bench_torch.py --only "$MODELS" --batch "$BATCH" --dtype "$DTYPES" --runs "$RUNS" \
  $COMPILE_FLAG --json "$OUT/torch.jsonl" 2>&1 | grep -v -i warn | tee -a "$OUT/results.txt"
