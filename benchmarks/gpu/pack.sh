#!/usr/bin/env bash
# Packs what the GPU benchmarks need on the GPU machine (which has no Partita build, no ONNX or
# protobuf libraries of Debian's) into one folder: the `partita` program, its libraries and
# plug-ins, Debian's libonnx / libprotobuf, and benchmarks/. Carry it with the device tool.
#
#   bash benchmarks/gpu/pack.sh [build dir] [bundle dir]    (defaults: build, .gpu_bench)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
out="${2:-.gpu_bench}"
rm -rf "$out" && mkdir -p "$out/lib"
cp "$build/partita" "$out/"
cp "$build"/libpartita.so "$build"/libpartita_runtime.so "$build"/libpartita_frontend_onnx.so \
   "$build"/libpartita_runtime_cuda.so "$build"/libpartita_runtime_cublas.so \
   "$build"/libpartita_runtime_cudnn.so "$out/lib/"
for lib in libonnx.so.1 libonnx_proto.so.1 libprotobuf.so.32; do
  cp -L "/lib/x86_64-linux-gnu/$lib" "$out/lib/"
done
cp -r benchmarks/gpu benchmarks/models "$out/"
rm -rf "$out/models/cache"
du -sh "$out"
