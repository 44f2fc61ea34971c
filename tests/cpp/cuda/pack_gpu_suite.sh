#!/bin/bash
# Bundles what run_gpu_suite.sh needs into $1 (default: .gpu_cudart in the main checkout): the
# test programs and libraries of a build without oneDNN/OpenBLAS (those are not on the GPU
# machine; $2, default build-gpu), the shared libraries of ours that the GPU machine lacks, the
# headers and binding sources for the Python extension, and the Python tests.
set -eu
SRC=$(cd "$(dirname "$0")/../../.." && pwd)
DEST=${1:-/work/main/.gpu_cudart}
BUILD=${2:-$SRC/build-gpu}
rm -rf "$DEST" && mkdir -p "$DEST"/{bin,lib,src,tests/python,include}
cp "$BUILD"/test_cuda "$BUILD"/test_runtime "$DEST/bin/"
cp "$BUILD"/libpartita*.so "$DEST/lib/"
for l in libonnx.so.1 libonnx_proto.so.1 libprotobuf.so.32; do cp -L /lib/x86_64-linux-gnu/$l "$DEST/lib/"; done
cp -L /usr/local/cuda/lib64/libcudart.so.13 "$DEST/lib/"
cp -r "$SRC/include/partita" "$DEST/include/" && cp -r /usr/include/dlpack "$DEST/include/"
cp -r "$SRC/src/python" "$DEST/src/" && cp -r "$SRC/python" "$DEST/"
find "$DEST/python" -name __pycache__ -prune -exec rm -rf {} +
cp "$SRC"/tests/python/{conftest.py,test_devices.py,test_dlpack.py} "$DEST/tests/python/"
cp "$SRC/tests/cpp/cuda/run_gpu_suite.sh" "$DEST/"
strip --strip-unneeded "$DEST"/bin/* "$DEST"/lib/libpartita*.so
du -sh "$DEST"
