#!/bin/bash
# The epilogue micro-benchmark on the GPU machine (from a folder holding epilogue_bench and this
# script): the clocks while it runs, the table, and the SASS size of each variant's kernel
# (SASS=0: not).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv,noheader -lms 250 \
  > "$OUT/clocks.csv" &
smi=$!
./epilogue_bench 2>&1 | tee "$OUT/bench.txt"
kill $smi
# Instructions per kernel (SASS lines with an opcode), for the instruction-cache question.
if [ "${SASS:-1}" = 1 ] && command -v cuobjdump > /dev/null; then
  cuobjdump --dump-sass epilogue_bench > /tmp/sass.txt 2>&1
  awk '/Function :/{f=$3} /^ +\/\*[0-9a-f]+\*\//{n[f]++} END{for (k in n) print n[k], k}' /tmp/sass.txt \
    | sort -n | tee "$OUT/sass_sizes.txt" | cut -c1-160
  xz -c /tmp/sass.txt > "$OUT/sass.txt.xz"
fi
sort -t, -k2 -n "$OUT/clocks.csv" | head -2; tail -3 "$OUT/clocks.csv"
