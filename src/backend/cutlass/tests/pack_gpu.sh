#!/bin/bash
# Bundles the cutlass backend's GPU run into $1 (default /work/main/.gpu_cutlass): the test
# program, our libraries, the object cache the precompile filled, the sources of the GEMM units
# still to compile there, the CUTLASS headers (a compressed copy, for those and for a kernel the
# profiler picks that is not cached), the benchmark's shapes, its cuBLASLt side (built here with
# tests/lt_bench/build.sh) and PyTorch side, and run_gpu.sh.
set -eu
SRC=$(cd "$(dirname "$0")/../../../.." && pwd)
DEST=${1:-/work/main/.gpu_cutlass}
BUILD=${2:-$SRC/build}
rm -rf "$DEST" && mkdir -p "$DEST"/{bin,lib}
cp "$BUILD"/test_backend_cutlass "$DEST/bin/"
[ -x "$BUILD/lt_bench/lt_bench" ] || bash "$SRC/src/backend/cutlass/tests/lt_bench/build.sh" "$BUILD/lt_bench"
cp "$BUILD/lt_bench/lt_bench" "$DEST/bin/"
PARTITA_CUTLASS_BENCH_SHAPES="$DEST/shapes.tsv" "$BUILD"/test_backend_cutlass --gtest_filter=CutlassBench.ShapesFile \
  > /dev/null
cp "$BUILD"/libpartita.so "$BUILD"/libpartita_runtime.so "$BUILD"/libpartita_runtime_cuda.so \
   "$BUILD"/libpartita_runtime_cutlass.so "$DEST/lib/"
# The ONNX importer (and its libraries) when it was built: the tests do not need it.
if [ -f "$BUILD"/libpartita_frontend_onnx.so ]; then
  cp "$BUILD"/libpartita_frontend_onnx.so "$DEST/lib/"
  for l in libonnx.so.1 libonnx_proto.so.1 libprotobuf.so.32; do cp -L /lib/x86_64-linux-gnu/$l "$DEST/lib/"; done
fi
strip --strip-unneeded "$DEST"/bin/* "$DEST"/lib/libpartita*.so
mkdir -p "$DEST/cache" && cp "$BUILD"/cutlass_cache/*.o "$BUILD"/cutlass_cache/*.cu "$DEST/cache/"
# The GEMM units the GPU tests' modules need (recorded by their precompile mode), for the GPU
# machine to compile those not in the cache yet.
cp -r "$BUILD"/cutlass_cache/pending_units "$DEST/cache/"
# The epilogue micro-benchmark (epilogue_bench/run.sh), when it was built into $BUILD/epilogue_bench.
if [ -x "$BUILD/epilogue_bench/epilogue_bench" ]; then
  mkdir -p "$DEST/epilogue_bench"
  cp "$BUILD/epilogue_bench/epilogue_bench" "$SRC/src/backend/cutlass/tests/epilogue_bench/run.sh" "$DEST/epilogue_bench/"
fi
CUT=$(ls -d "$SRC"/.deps/venv/lib/python3*/site-packages/cutlass_library/source)
tar -C "$CUT" -cJf "$DEST/cutlass_headers.tar.xz" include tools/util/include examples/41_fused_multi_head_attention
cp "$SRC/benchmarks/gpu/bench_cutlass.py" "$SRC/benchmarks/gpu/bench_attention.py" "$SRC/src/backend/cutlass/tests/run_gpu.sh" \
   "$SRC/src/backend/cutlass/tests/run_gpu_probe.sh" "$DEST/"
du -sh "$DEST"
