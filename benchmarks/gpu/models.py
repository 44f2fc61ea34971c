#!/usr/bin/env python3
"""The GPU benchmark models, built on the GPU machine by its own PyTorch (large ONNX files are
better made where they run than carried there), with random seeded weights.

    python3 benchmarks/gpu/models.py --out DIR [--only NAME,...] [--batch 1,32]

For each model NAME and batch B it writes into DIR:
    NAME_bB.onnx         the model (opset 17, fp32)
    NAME_bB.input.npy    one random input (float32)
    NAME_bB.ref.npy      PyTorch's fp32 output for it on the GPU with TF32 off

Models: the CPU benchmarks' resnet50 / mobilenet_v2 / mlp (benchmarks/models/export.py builds
them, BatchNorm calibrated the same way), torchvision's convnext_tiny, efficientnet_b0,
densenet121 and vit_b_16, and a BERT-base encoder (12 layers, hidden 768, 12 heads, sequence
128) from transformers' BertModel with a random configuration-initialised model (its input is
the embeddings' output, so the model is the encoder stack itself: the part a compiler runs).
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import export as cpu_models  # noqa: E402  (benchmarks/models/export.py)

OPSET = 17
SEED = 0
VISION = ["convnext_tiny", "efficientnet_b0", "densenet121", "vit_b_16"]
MODELS = ["resnet50", "mobilenet_v2", "mlp", "bert_base"] + VISION


class BertEncoder:
    """BERT-base's encoder stack on precomputed embeddings (batch, 128, 768)."""

    @staticmethod
    def build(batch):
        import torch
        from transformers import BertConfig, BertModel
        torch.manual_seed(SEED)
        config = BertConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                            intermediate_size=3072, hidden_act="gelu", attn_implementation="eager")
        bert = BertModel(config, add_pooling_layer=False).eval()

        class Encoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = bert.encoder

            def forward(self, h):
                return self.encoder(h).last_hidden_state

        gen = torch.Generator().manual_seed(SEED + 1)
        return Encoder().eval(), torch.randn(batch, 128, 768, generator=gen)


def build(name, batch):
    """(torch module in eval mode, example input) for NAME at batch BATCH."""
    import torch
    import torchvision
    if name == "bert_base":
        return BertEncoder.build(batch)
    if name in VISION:
        torch.manual_seed(SEED)
        gen = torch.Generator().manual_seed(SEED + 1)
        model = getattr(torchvision.models, name)(weights=None)
        cpu_models.calibrate_batchnorm(model, (1, 3, 224, 224), gen)
        return model.eval(), torch.randn(batch, 3, 224, 224, generator=gen)
    model, x = cpu_models.build(name)
    return model, x.expand(batch, *x.shape[1:]).contiguous() if name != "mlp" else x


def export(name, batch, out_dir, dtype="float32"):
    """Writes NAME_bBATCH[_fp16].{onnx,input.npy,ref.npy}; float16 models are exported from the
    model made .half() on the GPU (PyTorch's CPU has no half convolutions), and their reference
    is PyTorch's own float16 output on the GPU."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    half = dtype == "float16"
    stem = os.path.join(out_dir, "%s_b%d%s" % (name, batch, "_fp16" if half else ""))
    model, x = build(name, batch)
    model, x = model.cuda(), x.cuda()
    if half:
        model, x = model.half(), x.half()
    with torch.no_grad():
        ref = model(x).float().cpu()
    if not half:
        model, x = model.cpu(), x.cpu()
    kwargs = dict(opset_version=OPSET, input_names=["input"], output_names=["output"],
                  do_constant_folding=True)
    try:  # PyTorch >= 2.9 defaults to the dynamo exporter; the TorchScript one is what we test
        torch.onnx.export(model, (x,), stem + ".onnx", dynamo=False, **kwargs)
    except TypeError:
        torch.onnx.export(model, (x,), stem + ".onnx", **kwargs)
    np.save(stem + ".input.npy", x.cpu().numpy().astype(np.float16 if half else np.float32))
    np.save(stem + ".ref.npy", ref.numpy().astype(np.float32))
    return stem + ".onnx"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=",".join(MODELS))
    ap.add_argument("--batch", default="1")
    ap.add_argument("--dtype", default="float32", help="float32, float16 or both (comma list)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    failed = False
    for name in args.only.split(","):
        for batch in map(int, args.batch.split(",")):
            for dtype in args.dtype.split(","):
                try:
                    path = export(name, batch, args.out, dtype)
                    print("%-16s b%-3d %-8s %s (%.1f MB)" % (
                        name, batch, dtype, path, os.path.getsize(path) / 1e6), flush=True)
                except Exception as e:  # report every model, not only the first failure
                    failed = True
                    print("%-16s b%-3d %-8s FAILED: %s: %s" % (name, batch, dtype, type(e).__name__, e),
                          file=sys.stderr, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
