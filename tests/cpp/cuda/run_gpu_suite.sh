#!/bin/bash
# Runs the GPU suite on a machine with a GPU from a bundle made by pack_gpu_suite.sh (built
# elsewhere): the CUDA C++ tests, the runtime tests, and the Python device tests against the
# machine's own Python, for which the extension is compiled here (the bundle carries the
# libraries, headers and binding sources). Logs go to $OUT (or ./out).
set -u
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "missing libraries:"; ldd bin/test_cuda lib/*.so | grep "not found" | sort -u
} 2>&1 | tee "$OUT/env.log"

echo "=== test_cuda"; ./bin/test_cuda 2>&1 | tee "$OUT/test_cuda.log" | grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) |measure|Failure|error" 
echo "=== test_runtime"; ./bin/test_runtime 2>&1 | tee "$OUT/test_runtime.log" | tail -4

echo "=== python extension"
PY=${PY:-python3}
PYINC=$($PY -c "import sysconfig; print(sysconfig.get_paths()['include'])")
PBINC=$($PY -c "import pybind11; print(pybind11.get_include())" 2>/dev/null || echo /usr/include)
EXT=$($PY -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
ls "$PYINC/Python.h" "$PBINC/pybind11/pybind11.h" || exit 0
mkdir -p obj pkg && cp -r python/partita pkg/
pids=()
for f in src/python/*.cc; do
  g++ -O1 -std=c++20 -fPIC -fvisibility=hidden -w -Iinclude -I"$PYINC" -I"$PBINC" -c "$f" -o "obj/$(basename "$f" .cc).o" &
  pids+=($!)
done
ok=1
for p in "${pids[@]}"; do wait "$p" || ok=0; done
[ $ok = 1 ] || { echo "extension compile failed"; exit 0; }
g++ -shared obj/*.o -o "pkg/partita/_ffi$EXT" -Llib -lpartita_frontend_onnx -lpartita -lpartita_runtime \
  -Wl,-rpath,"$PWD/lib" || exit 0
echo "=== pytest"
PYTHONPATH=$PWD/pkg PYTHONUNBUFFERED=1 $PY -m pytest -q -rs -p no:cacheprovider tests/python/test_devices.py \
  tests/python/test_dlpack.py 2>&1 | tee "$OUT/pytest.log" | tail -15
