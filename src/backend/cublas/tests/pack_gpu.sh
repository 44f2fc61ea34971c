#!/bin/bash
# Bundles what run_gpu.sh needs on the GPU machine into $1 (default /work/main/.gpu_cublas, an
# ignored folder of the main checkout, which the device tool copies): test_backend_cublas (GPU
# tests, differential test, benchmark half), the partita CLI, our libraries and plug-ins,
# Debian's ONNX / protobuf libraries the CLI links, the generated-kernel cache filled here (the
# tests compile every kernel without a GPU), the seed artifacts test_cublas.py exports, and the
# benchmark driver. Build dir $2 (default build).
set -eu
SRC=$(cd "$(dirname "$0")/../../../.." && pwd)
DEST=${1:-/work/main/.gpu_cublas}
BUILD=${2:-$SRC/build}
rm -rf "$DEST" && mkdir -p "$DEST"/{bin,lib,artifacts}
cp "$BUILD"/test_backend_cublas "$BUILD"/partita "$DEST/bin/"
cp "$BUILD"/libpartita.so "$BUILD"/libpartita_runtime.so "$BUILD"/libpartita_frontend_onnx.so \
   "$BUILD"/libpartita_runtime_cuda.so "$BUILD"/libpartita_runtime_cublas.so "$DEST/lib/"
for l in libonnx.so.1 libonnx_proto.so.1 libprotobuf.so.32; do cp -L /lib/x86_64-linux-gnu/$l "$DEST/lib/"; done
# Fill the kernel cache (no GPU needed), then take it along.
PARTITA_TEST_CUDA_CACHE="$BUILD/cuda_kernel_cache" "$BUILD"/test_backend_cublas --gtest_brief=1 > /dev/null
cp -r "$BUILD/cuda_kernel_cache" "$DEST/cache"
PARTITA_CUBLAS_ARTIFACT_DIR="$DEST/artifacts" PYTHONPATH="$BUILD/python" /usr/bin/python3 -m pytest -q \
  "$SRC/tests/python/test_cublas.py" -k fresh_process > /dev/null
cp "$SRC/benchmarks/gpu/bench_cublas_gemm.py" "$SRC/src/backend/cublas/tests/run_gpu.sh" "$DEST/"
strip --strip-unneeded "$DEST"/bin/* "$DEST"/lib/libpartita*.so
du -sh "$DEST"
