#!/usr/bin/env bash
# Sets up, builds, and runs the main job:
#  1. the bundled real model (models/mobilenet_v2_small.onnx, a torchvision MobileNetV2 with
#     random weights): imported, partitioned for oneDNN + OpenBLAS, built, exported, run on the
#     bundled input, checked against the PyTorch reference beside it, with the partition report
#     (and an SVG picture of the partitioned graph) and latency;
#  2. the seed tutorial: its module partitioned for the C-source backend through both composite
#     paths, printed, built, exported, reloaded and checked, then run again in a fresh process
#     linked against the runtime library alone.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out=build/demo
mkdir -p "$out"
model=models/mobilenet_v2_small

echo "== real model: $model.onnx"
./build/partita report "$model.onnx" --backends cblas,dnnl --svg "$out/mobilenet_v2_small.svg"
./build/partita compile "$model.onnx" --backends cblas,dnnl -o "$out/mobilenet_v2_small.partita"
./build/partita run "$out/mobilenet_v2_small.partita" --input "input=$model.input.npy" --repeat 50 --profile \
  --output-dir "$out/mobilenet_v2_small.out"
/usr/bin/python3 - "$out/mobilenet_v2_small.out/output_0.npy" "$model.ref.npy" <<'PY'
import sys
import numpy as np
got, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
err = float(np.max(np.abs(got - ref)) / max(float(np.max(np.abs(ref))), 1e-30))
print(f"output vs PyTorch reference: max relative error {err:.2e}", "(ok)" if err <= 1e-4 else "(TOO LARGE)")
sys.exit(0 if err <= 1e-4 else 1)
PY

echo
echo "== the seed tutorial, both composite paths, C-source backend"
./build/partita_demo "$out"
for path in 1 2; do
  echo "== fresh process, runtime library only: path $path"
  ./build/partita_run_min "$out/seed_path$path.partita" main float32:10x10 float32:10x10 | head -3
done
