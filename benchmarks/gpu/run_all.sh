#!/usr/bin/env bash
# The whole GPU benchmark in one device call, run ON the GPU machine from pack.sh's bundle: the
# CPU work in parallel first (exports with the machine's PyTorch, one process per model;
# `partita compile --target cuda [--backends ...]`, JOBS at a time), then the GPU timings one at a
# time (each artifact in a fresh `partita run --device cuda` process, median of RUNS after 10
# warm-ups, checked against PyTorch's output; then PyTorch in the order of PHASES:
# ENGINE:BATCH:DTYPE with ENGINE eager (with and without TF32 for float32) or compile
# (torch.compile, COMPILE_MODE), so that what matters most is measured first when the call's time
# runs out).
#
#   cd .gpu_bench && MODELS=mlp,resnet50 BATCH=1,32 DTYPES=float32,float16 \
#     VARIANTS="lib=cublas,cudnn" VARIANT_MODELS=resnet50 bash gpu/run_all.sh
#
# Every model is compiled for the `cuda` target alone (generated kernels for everything);
# VARIANTS adds, for each batch and dtype of VARIANT_MODELS, space-separated TAG=BACKENDS builds
# with those BYOC backends first (`--backends BACKENDS`, the rest generated); BACKENDS may end in
# `|TARGET|TARGET...`, each a `--target` of the compile with `~` for its spaces (e.g.
# `tuned=cublas,cudnn|cudnn~-autotune=1~-autotune_top_k=4`; BACKENDS empty: generated CUDA alone
# with other options, `ffma=|cuda~-gemm_mma_split_k=0`). NOVARIANT_PLAIN=1
# skips the plain `cuda` builds of VARIANT_MODELS. Results: $OUT/results.txt, $OUT/torch.jsonl,
# $OUT/env.log; every other log goes into $OUT/logs.tgz, refreshed after each phase (the device
# tool returns at most 8 files, and only what exists when a call times out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
M=${M:-/tmp/gpu_models}
L=$M/logs  # per-model logs, packed into $OUT/logs.tgz
mkdir -p "$OUT" "$M" "$L"
pack_logs() { tar czf "$OUT/logs.tgz.tmp" -C "$L" . 2>/dev/null && mv "$OUT/logs.tgz.tmp" "$OUT/logs.tgz"; }
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
MODELS=${MODELS:-$(python3 -c "import sys; sys.path.insert(0, 'gpu'); import models; print(','.join(models.MODELS))")}
BATCH=${BATCH:-1,32}
DTYPES=${DTYPES:-float32,float16}
RUNS=${RUNS:-50}
JOBS=${JOBS:-8}
COMPILE_MODE=${COMPILE_MODE:-default}
PHASES=${PHASES:-eager:1:float32 eager:1:float16 compile:1:float32 eager:32:float32 eager:32:float16 compile:32:float16 compile:1:float16 compile:32:float32}
COMPILE_MODELS=${COMPILE_MODELS:-$MODELS}  # the models torch.compile phases time
PROFILE=${PROFILE:-}  # a regex of tags whose artifact also runs once with --profile (per-call times)
VARIANTS=${VARIANTS:-}
VARIANT_MODELS=${VARIANT_MODELS:-$MODELS}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/env.log"
echo "start $(date -u +%FT%TZ)" | tee -a "$OUT/env.log"

for m in ${MODELS//,/ }; do
  python3 gpu/models.py --out "$M" --only "$m" --batch "$BATCH" --dtype "$DTYPES" 2>&1 \
    | grep -v -i warn > "$L/export_$m.log" &
done
wait
cat "$L"/export_*.log | grep FAILED | tee -a "$OUT/results.txt"
echo "exported $(date -u +%TZ)" | tee -a "$OUT/env.log"

# Compile jobs: "TAG STEM BACKENDS" (BACKENDS "-": the cuda target alone).
jobs_file=$L/compile_jobs.txt
: > "$jobs_file"
for m in ${MODELS//,/ }; do
  for b in ${BATCH//,/ }; do
    for dt in ${DTYPES//,/ }; do
      sfx=; [ "$dt" = float16 ] && sfx=_fp16
      stem=$M/${m}_b$b$sfx
      [ -f "$stem.onnx" ] || continue
      variant_model=0; [[ ",$VARIANT_MODELS," == *",$m,"* ]] && variant_model=1
      [ "$variant_model" = 1 ] && [ "${NOVARIANT_PLAIN:-0}" = 1 ] || echo "${m}_b$b$sfx $stem -" >> "$jobs_file"
      if [ "$variant_model" = 1 ]; then
        for v in $VARIANTS; do echo "${m}_b$b$sfx@${v%%=*} $stem ${v#*=}" >> "$jobs_file"; done
      fi
    done
  done
done
compile_one() {
  local tag=$1 stem=$2 backends=$3 t0 t1 extra=()
  if [ "$backends" != - ]; then
    IFS='|' read -r -a parts <<< "$backends"
    [ -n "${parts[0]}" ] && extra=(--backends "${parts[0]}")  # empty: the cuda target alone, other options
    for t in "${parts[@]:1}"; do extra+=(--target "${t//\~/ }"); done
  fi
  t0=$(date +%s.%N)
  if ./partita compile "$stem.onnx" --target cuda "${extra[@]}" -o "$M/$tag.partita" -q > "$L/$tag.compile.log" 2>&1; then
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
 while read -r tag stem backends; do
  if [ ! -f "$M/$tag.compile_s" ]; then
    echo "$tag: compile FAILED: $(tail -1 "$L/$tag.compile.log")" | tee -a "$OUT/results.txt"
    continue
  fi
  inputs=(); while read -r spec; do inputs+=(--input "$spec"); done < "$stem.inputs"
  ./partita run "$M/$tag.partita" --device cuda "${inputs[@]}" --repeat "$RUNS" \
    --warmup 10 --output-dir "$M/$tag.out" > "$L/$tag.run.log" 2>&1 \
    || { echo "$tag: run FAILED: $(tail -1 "$L/$tag.run.log")" | tee -a "$OUT/results.txt"; continue; }
  if [ -n "$PROFILE" ] && [[ "$tag" =~ $PROFILE ]]; then
    ./partita run "$M/$tag.partita" --device cuda "${inputs[@]}" --repeat 1 --warmup 3 --profile \
      > "$L/$tag.profile.log" 2>&1
  fi
  python3 - "$tag" "$stem" "$M/$tag.compile_s" "$L/$tag.run.log" "$L/$tag.compile.log" "$M/$tag.out" <<'PY' | tee -a "$OUT/results.txt"
import os, re, sys
import numpy as np
tag, stem, cs, log, clog, outdir = sys.argv[1:]
def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))
got = np.load(outdir + "/output_0.npy").astype(np.float32)
ref = np.load(stem + ".ref.npy")
errs = "max rel err vs PyTorch %.2e" % rel(got, ref)
if os.path.exists(stem + ".ref32.npy"):  # float16: both errors against the float32 model
    ref32 = np.load(stem + ".ref32.npy")
    errs += ", vs fp32 %.2e (PyTorch fp16's %.2e)" % (rel(got, ref32), rel(ref, ref32))
run_log = open(log).read()
med = re.search(r"median ([0-9.]+) ms", run_log).group(1)
first = re.search(r"load and first run: ([0-9.]+) ms", run_log)
where = re.search(r"\((.*); [0-9.]+ [KM]?i?B\)", open(clog).read())
print("%-34s partita median %8s ms  compile %5s s  load+first run %6s s  %s  [%s]" % (
    tag, med, open(cs).read().strip(), "%.2f" % (float(first.group(1)) / 1000) if first else "?", errs,
    where.group(1) if where else "?"))
PY
done < "$1"
 echo "partita timed $1 $(date -u +%TZ)" | tee -a "$OUT/env.log"
 pack_logs
}

time_torch() {  # one phase ENGINE:BATCH:DTYPE
  IFS=: read -r engine b dt <<< "$1"
  [[ ",$BATCH," == *",$b,"* && ",$DTYPES," == *",$dt,"* ]] || return 0
  engines=$engine models=$MODELS
  [ "$engine" = eager ] && engines=eager,eager-tf32
  [ "$engine" = compile ] && models=$COMPILE_MODELS
  python3 gpu/bench_torch.py --only "$models" --batch "$b" --dtype "$dt" --runs "$RUNS" \
    --engines "$engines" --compile-mode "$COMPILE_MODE" --json "$OUT/torch.jsonl" 2>&1 | grep -v -i warn | tee -a "$OUT/results.txt"
  echo "$1 timed $(date -u +%TZ)" | tee -a "$OUT/env.log"
}
# Batch 1 first (Partita, then PyTorch's batch-1 PHASES in their order), then the rest.
grep -E '^[^ ]*_b1[_@ ]' "$jobs_file" > "$L/jobs_first.txt"
grep -v -E '^[^ ]*_b1[_@ ]' "$jobs_file" > "$L/jobs_rest.txt"
time_partita "$L/jobs_first.txt"
for p in $PHASES; do [[ "$p" == *:1:* ]] && time_torch "$p"; done
time_partita "$L/jobs_rest.txt"
for p in $PHASES; do [[ "$p" == *:1:* ]] || time_torch "$p"; done
echo "done $(date -u +%TZ)" | tee -a "$OUT/env.log"
pack_logs
