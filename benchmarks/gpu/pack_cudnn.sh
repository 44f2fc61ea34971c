#!/usr/bin/env bash
# Packs the cudnn backend's GPU tests and benchmark for the GPU machine (no Partita build there):
# test_backend_cudnn, the libraries and plug-ins it loads (the cuda plug-in is the CUDA device
# API), bench_cudnn.py and run_cudnn.sh. Carry the folder with the device tool and run
# `cd <folder> && bash run_cudnn.sh` there; results go to $OUT.
#
#   bash benchmarks/gpu/pack_cudnn.sh [build dir] [bundle dir]   (defaults: build, /work/main/.gpu_cudnn)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
out="${2:-/work/main/.gpu_cudnn}"
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"
cp "$build/test_backend_cudnn" "$out/bin/"
cp "$build"/libpartita.so "$build"/libpartita_runtime.so "$build"/libpartita_runtime_cuda.so \
   "$build"/libpartita_runtime_cudnn.so "$out/lib/"
strip --strip-unneeded "$out"/bin/* "$out"/lib/*.so
cp benchmarks/gpu/bench_cudnn.py benchmarks/gpu/run_cudnn.sh "$out/"
du -sh "$out"
