#!/bin/bash
# Builds the cuBLASLt side of the CUTLASS GEMM benchmark (lt_bench.cu) into <out dir>.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUTD=${1:?usage: build.sh <out dir>}
mkdir -p "$OUTD"
nvcc -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a -o "$OUTD/lt_bench" "$HERE/lt_bench.cu" -lcublasLt
