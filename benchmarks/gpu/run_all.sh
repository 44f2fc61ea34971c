#!/usr/bin/env bash
# The whole GPU benchmark in one device call, run ON the GPU machine from pack.sh's bundle: the
# CPU work in parallel first (exports with the machine's PyTorch, one process per model;
# `partita compile --target cuda`, JOBS at a time), then the GPU timings one at a time (each
# artifact in a fresh `partita run --device cuda` process, median of RUNS after 10 warm-ups,
# checked against PyTorch's output; then PyTorch in the order of PHASES: ENGINE:BATCH:DTYPE with
# ENGINE eager (with and without TF32 for float32) or compile (torch.compile, default mode), so
# that what matters most is measured first when the call's time runs out).
#
#   cd .gpu_bench && MODELS=mlp,resnet50 BATCH=1,32 DTYPES=float32,float16 \
#     VARIANTS="g4=cuda+-gemm_split_k_groups=4" VARIANT_MODELS=resnet50 bash gpu/run_all.sh
#
# VARIANTS: space-separated TAG=TARGET pairs (TARGET's spaces as '+') compiled and timed for
# batch-1 float32 of VARIANT_MODELS besides plain `cuda`. Results: $OUT/results.txt,
# $OUT/torch.jsonl, $OUT/env.log; every other log goes into $OUT/logs.tgz, refreshed after each
# phase (the device tool returns at most 8 files, and only what exists when a call times out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
M=/tmp/gpu_models
L=$M/logs  # per-model logs, packed into $OUT/logs.tgz
mkdir -p "$OUT" "$M" "$L"
pack_logs() { tar czf "$OUT/logs.tgz.tmp" -C "$L" . 2>/dev/null && mv "$OUT/logs.tgz.tmp" "$OUT/logs.tgz"; }
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
MODELS=${MODELS:-mlp,resnet50,mobilenet_v2,bert_base,convnext_tiny,efficientnet_b0}
BATCH=${BATCH:-1,32}
DTYPES=${DTYPES:-float32,float16}
RUNS=${RUNS:-50}
JOBS=${JOBS:-8}
PHASES=${PHASES:-eager:1:float32 compile:1:float32 eager:32:float32 eager:1:float16 eager:32:float16 compile:32:float16 compile:1:float16 compile:32:float32}
VARIANTS=${VARIANTS:-}
VARIANT_MODELS=${VARIANT_MODELS:-$MODELS}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/env.log"
echo "start $(date -u +%FT%TZ)" | tee -a "$OUT/env.log"

for m in ${MODELS//,/ }; do
  python3 gpu/models.py --out "$M" --only "$m" --batch "$BATCH" --dtype "$DTYPES" 2>&1 \
    | grep -v -i warn > "$L/export_$m.log" &
done
wait
echo "exported $(date -u +%TZ)" | tee -a "$OUT/env.log"

# Compile jobs: "TAG STEM TARGET" (TARGET with '+' for spaces).
jobs_file=$L/compile_jobs.txt
: > "$jobs_file"
for m in ${MODELS//,/ }; do
  for b in ${BATCH//,/ }; do
    for dt in ${DTYPES//,/ }; do
      sfx=; [ "$dt" = float16 ] && sfx=_fp16
      [ -f "$M/${m}_b$b$sfx.onnx" ] && echo "${m}_b$b$sfx $M/${m}_b$b$sfx cuda" >> "$jobs_file"
    done
  done
  for v in $VARIANTS; do
    [[ ",$VARIANT_MODELS," == *",$m,"* ]] && [ -f "$M/${m}_b1.onnx" ] && echo "${m}_b1@${v%%=*} $M/${m}_b1 ${v#*=}" >> "$jobs_file"
  done
done
compile_one() {
  local tag=$1 stem=$2 target=${3//+/ } t0 t1
  t0=$(date +%s.%N)
  if ./partita compile "$stem.onnx" --target "$target" -o "$M/$tag.partita" -q > "$L/$tag.compile.log" 2>&1; then
    t1=$(date +%s.%N)
    python3 -c "print('%.1f' % ($t1 - $t0))" > "$M/$tag.compile_s"
  fi
}
export -f compile_one
export OUT M L
xargs -P "$JOBS" -L 1 bash -c 'compile_one "$@"' _ < "$jobs_file"
echo "compiled $(date -u +%TZ)" | tee -a "$OUT/env.log"
pack_logs

time_partita() {  # the compile jobs of $1 (a file), each timed
 while read -r tag stem target; do
  if [ ! -f "$M/$tag.compile_s" ]; then
    echo "$tag: compile FAILED: $(tail -1 "$OUT/$tag.compile.log")" | tee -a "$OUT/results.txt"
    continue
  fi
  ./partita run "$M/$tag.partita" --device cuda --input "input=$stem.input.npy" --repeat "$RUNS" \
    --warmup 10 --output-dir "$M/$tag.out" > "$L/$tag.run.log" 2>&1 \
    || { echo "$tag: run FAILED: $(tail -1 "$OUT/$tag.run.log")" | tee -a "$OUT/results.txt"; continue; }
  python3 - "$tag" "$stem" "$M/$tag.compile_s" "$L/$tag.run.log" "$L/$tag.compile.log" "$M/$tag.out" <<'PY' | tee -a "$OUT/results.txt"
import re, sys
import numpy as np
tag, stem, cs, log, clog, outdir = sys.argv[1:]
got = np.load(outdir + "/output_0.npy").astype(np.float32)
ref = np.load(stem + ".ref.npy")
err = float(np.max(np.abs(got - ref)) / max(float(np.max(np.abs(ref))), 1e-30))
med = re.search(r"median ([0-9.]+) ms", open(log).read()).group(1)
where = re.search(r"\((.*); [0-9.]+ [KM]?i?B\)", open(clog).read())
print("%-28s partita-cuda median %8s ms  compile %5s s  max rel err vs PyTorch %.2e  [%s]" % (
    tag, med, open(cs).read().strip(), err, where.group(1) if where else "?"))
PY
done < "$1"
 echo "partita timed $1 $(date -u +%TZ)" | tee -a "$OUT/env.log"
 pack_logs
}

time_torch() {  # one phase ENGINE:BATCH:DTYPE
  IFS=: read -r engine b dt <<< "$1"
  [[ ",$BATCH," == *",$b,"* && ",$DTYPES," == *",$dt,"* ]] || return 0
  engines=$engine; [ "$engine" = eager ] && engines=eager,eager-tf32
  python3 gpu/bench_torch.py --only "$MODELS" --batch "$b" --dtype "$dt" --runs "$RUNS" \
    --engines "$engines" --json "$OUT/torch.jsonl" 2>&1 | grep -v -i warn | tee -a "$OUT/results.txt"
  echo "$1 timed $(date -u +%TZ)" | tee -a "$OUT/env.log"
}
# Batch-1 float32 first (Partita, eager, torch.compile), then the rest.
grep -E '^[^ ]*_b1 ' "$jobs_file" > "$L/jobs_first.txt"
grep -v -E '^[^ ]*_b1 ' "$jobs_file" > "$L/jobs_rest.txt"
time_partita "$L/jobs_first.txt"
time_torch eager:1:float32
time_torch compile:1:float32
time_partita "$L/jobs_rest.txt"
for p in $PHASES; do
  [ "$p" = eager:1:float32 ] || [ "$p" = compile:1:float32 ] || time_torch "$p"
done
echo "done $(date -u +%TZ)" | tee -a "$OUT/env.log"
pack_logs
