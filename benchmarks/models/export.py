#!/usr/bin/env python3
"""Exports the benchmark models from Debian's PyTorch / torchvision with random (seeded) weights
to ONNX (opset 17), with one random input and PyTorch's output as the reference.

    /usr/bin/python3 benchmarks/models/export.py [--out DIR] [--only NAME,...] [--force]

For each model NAME it writes, into DIR (default benchmarks/models/cache, not committed):
    NAME.onnx            the model
    NAME.input.npy       its input (float32)
    NAME.ref.npy         PyTorch's output for that input (eval mode)
The models are the ones issue 5 names: resnet18, resnet50, mobilenet_v2 (224x224, batch 1), a
2-layer nn.TransformerEncoder (d_model 256, 4 heads, seq 128, batch 1, batch_first) and a 3-layer
MLP (batch 64, 1024 wide, ReLU).
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "cache")
OPSET = 17
SEED = 0


def calibrate_batchnorm(model, input_shape, gen, batches=2, batch_size=4):
    """Gives every BatchNorm realistic, seeded parameters. With torchvision's initialisation
    (running mean 0, var 1, identity affine) the eval-mode activations of a deep random network
    shrink by orders of magnitude per stage, until the output is the classifier bias and no
    longer depends on the input -- useless as a reference. So, like a trained network, the
    running statistics are measured on (random) data, and the affine parameters are random."""
    import torch
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the calibration batches
        with torch.no_grad():
            m.weight.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.75)
            m.bias.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch_size, *input_shape[1:], generator=gen))
    model.eval()


def build(name):
    """Returns (torch module in eval mode, example input tensor, input name, output name)."""
    import torch
    import torchvision
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    if name in ("resnet18", "resnet50", "mobilenet_v2"):
        model = getattr(torchvision.models, name)(weights=None)
        calibrate_batchnorm(model, (1, 3, 224, 224), gen)
        x = torch.randn(1, 3, 224, 224, generator=gen)
    elif name == "transformer":
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                                 dropout=0.0, batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        x = torch.randn(1, 128, 256, generator=gen)
    elif name == "mlp":
        model = torch.nn.Sequential(
            torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 1024), torch.nn.ReLU())
        x = torch.randn(64, 1024, generator=gen)
    else:
        raise ValueError("unknown model %r (known: %s)" % (name, ", ".join(MODELS)))
    model.eval()
    return model, x


MODELS = ["resnet18", "resnet50", "mobilenet_v2", "transformer", "mlp"]


def export(name, out_dir, force=False):
    import torch
    path = os.path.join(out_dir, name + ".onnx")
    if os.path.exists(path) and not force:
        return path
    model, x = build(name)
    # Gradients stay enabled: under no_grad, eval-mode TransformerEncoderLayer takes its fused
    # "fast path" (aten::_transformer_encoder_layer_fwd), which has no ONNX export.
    ref = model(x).detach()
    torch.onnx.export(model, (x,), path, opset_version=OPSET, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    # The reference must depend on the input, or comparing with it proves little.
    other = model(torch.randn(x.shape, generator=torch.Generator().manual_seed(SEED + 2)))
    sensitivity = float((other.detach() - ref).abs().max() / ref.abs().max())
    if sensitivity < 1e-2:
        raise RuntimeError("%s: output barely depends on the input (%.2g)" % (name, sensitivity))
    np.save(os.path.join(out_dir, name + ".input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(out_dir, name + ".ref.npy"), ref.numpy().astype(np.float32))
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--only", default=",".join(MODELS))
    ap.add_argument("--force", action="store_true", help="re-export models already in --out")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    failed = False
    for name in args.only.split(","):
        try:
            path = export(name, args.out, args.force)
            print("%-14s %s (%.1f MB)" % (name, path, os.path.getsize(path) / 1e6))
        except Exception as e:  # report every model, not only the first failure
            failed = True
            print("%-14s FAILED: %s: %s" % (name, type(e).__name__, e), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
