#!/usr/bin/env python3
"""Makes the small real model bundled for the main job: torchvision's MobileNetV2 at width 0.5,
100 classes, 96x96 input, with seeded random weights (BatchNorm statistics calibrated on random
data, see benchmarks/models/export.py, so the output depends on the input), exported to ONNX opset 17 with PyTorch's reference output.

    /usr/bin/python3 models/make_mobilenet_v2_small.py

Writes, beside this script:
    mobilenet_v2_small.onnx        the model (~3.3 MB): Conv (regular and depthwise), Clip
                                   (ReLU6), Add, GlobalAveragePool, Flatten, Gemm
    mobilenet_v2_small.input.npy   the input, float32 (1, 3, 96, 96)
    mobilenet_v2_small.ref.npy     PyTorch's output for it, float32 (1, 100)
Needs Debian's python3-torch and python3-torchvision (not needed to *use* the files).
"""
import os
import sys

import numpy as np
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "benchmarks", "models"))
from export import calibrate_batchnorm  # noqa: E402
NAME = "mobilenet_v2_small"


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model = torchvision.models.mobilenet_v2(weights=None, width_mult=0.5, num_classes=100)
    calibrate_batchnorm(model, (1, 3, 96, 96), gen)
    x = torch.randn(1, 3, 96, 96, generator=gen)
    with torch.no_grad():
        ref = model(x)
        torch.onnx.export(model, (x,), os.path.join(HERE, NAME + ".onnx"), opset_version=17,
                          input_names=["input"], output_names=["output"],
                          do_constant_folding=True)
    np.save(os.path.join(HERE, NAME + ".input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(HERE, NAME + ".ref.npy"), ref.numpy().astype(np.float32))


if __name__ == "__main__":
    main()
