#!/bin/bash
# Bundles the GPU suites of the cuda, cublas and cudnn backends into $1 (default
# /work/main/.gpu_suite, an ignored folder the device tool carries), from build dir $2 (default
# build): the test programs, our libraries and the CUDA plug-ins, Debian's ONNX and protobuf
# libraries they link, and the generated-kernel cache filled here (NVRTC needs no GPU). The
# cutlass suite compiles its kernels on the GPU machine and has its own bundle
# (src/backend/cutlass/tests/pack_gpu.sh).
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
DEST=${1:-/work/main/.gpu_suite}
BUILD=${2:-$SRC/build}
rm -rf "$DEST" && mkdir -p "$DEST"/{bin,lib}
cp "$BUILD"/test_backend_cuda "$BUILD"/test_backend_cublas "$BUILD"/test_backend_cudnn "$DEST/bin/"
for l in libpartita libpartita_runtime libpartita_frontend_onnx libpartita_runtime_cuda libpartita_runtime_cublas \
         libpartita_runtime_cudnn; do cp "$BUILD/$l.so" "$DEST/lib/"; done
for l in libonnx.so.1 libonnx_proto.so.1 libprotobuf.so.32; do cp -L /lib/x86_64-linux-gnu/$l "$DEST/lib/"; done
for t in cuda cublas cudnn; do
  PARTITA_TEST_CUDA_CACHE="$DEST/cache" PARTITA_TEST_SOURCE_DIR="$SRC" "$DEST/bin/test_backend_$t" --gtest_brief=1 \
    > /dev/null 2>&1 || true
done
cp "$SRC/tests/gpu/run.sh" "$DEST/"
strip --strip-unneeded "$DEST"/bin/* "$DEST"/lib/libpartita*.so
du -sh "$DEST"
