#!/bin/bash
# Builds the epilogue micro-benchmark: each variant one nvcc (in parallel, -j jobs), then bench.
# Usage: build.sh <cutlass source dir> <out dir> [jobs]
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
CUT=$1 OUTD=$2 J=${3:-2}
mkdir -p "$OUTD"
FLAGS="-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -DNDEBUG -w -I$CUT/include -I$CUT/tools/util/include -I$HERE"
ls "$HERE"/*.cu | grep -v bench.cu | xargs -P "$J" -I{} sh -c 'n=$(basename {} .cu); mkdir -p '"$OUTD"'/keep_$n && nvcc '"$FLAGS"' -Xptxas -v --keep --keep-dir '"$OUTD"'/keep_$n -c {} -o '"$OUTD"'/$n.o > '"$OUTD"'/$n.ptxas.log 2>&1; echo "$n: $?"'
nvcc $FLAGS -c "$HERE/bench.cu" -o "$OUTD/bench.o"
nvcc -gencode=arch=compute_90a,code=sm_90a -o "$OUTD/epilogue_bench" "$OUTD"/*.o -lcublasLt -lcuda
