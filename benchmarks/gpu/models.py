#!/usr/bin/env python3
"""The GPU benchmark models, built on the GPU machine by its own PyTorch (large ONNX files are
better made where they run than carried there), with random seeded weights.

    python3 benchmarks/gpu/models.py --out DIR [--only NAME,...] [--batch 1,32] [--dtype float32,float16]

For each model NAME, batch B and dtype it writes into DIR (STEM = NAME_bB, NAME_bB_fp16):
    STEM.onnx            the model (opset 17; float16 models from the model made .half())
    STEM.in.INPUT.npy    each graph input (float inputs in the model's dtype; token ids int64)
    STEM.inputs          `partita run`'s input arguments, one INPUT=FILE per line
    STEM.ref.npy         PyTorch's output in the model's dtype (float32 on the CPU, float16 on
                         the GPU), stored as float32
    STEM.ref32.npy       float16 models only: the float32 model's output on the CPU, the reference
                         both Partita's and PyTorch's float16 errors are measured against

Models: the CPU zoo of benchmarks/models/export.py (its 22 architectures, same weights and
inputs, batch dimension repeated B times; mlp keeps its 64 rows) and a BERT-base encoder
(12 layers, hidden 768, 12 heads, sequence 128) from transformers' BertModel with a random
configuration-initialised model (its input is the embeddings' output, so the model is the encoder
stack itself: the part a compiler runs).
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
MODELS = cpu_models.ZOO + ["bert_base"]


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
    """(torch module in eval mode, tuple of example inputs at batch BATCH, their input names)."""
    if name == "bert_base":
        model, x = BertEncoder.build(batch)
        return model, (x,), ["input"]
    model, inputs, names = cpu_models.build_with_inputs(name)
    if name != "mlp":  # the MLP's 64 rows are its batch already
        inputs = tuple(x.expand(batch, *x.shape[1:]).contiguous() for x in inputs)
    return model, inputs, names


def to_dtype(inputs, dtype):
    """Float inputs in DTYPE (token ids and masks keep their integer dtype)."""
    return tuple(x.to(dtype) if x.is_floating_point() else x for x in inputs)


def export(name, batch, out_dir, dtype="float32"):
    """Writes STEM's files (see the module's doc); returns the ONNX path."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(max(1, (os.cpu_count() or 8) // 8))  # exports run in parallel
    half = dtype == "float16"
    stem = os.path.join(out_dir, "%s_b%d%s" % (name, batch, "_fp16" if half else ""))
    model, inputs, names = build(name, batch)
    with torch.no_grad():
        ref32 = model(*inputs).float()
    if half:  # PyTorch's CPU has no half convolutions: the float16 model runs on the GPU
        model, inputs = model.cuda().half(), to_dtype(tuple(x.cuda() for x in inputs), torch.half)
        with torch.no_grad():
            ref = model(*inputs).float().cpu()
        np.save(stem + ".ref32.npy", ref32.numpy())
    else:
        ref = ref32
    kwargs = dict(opset_version=OPSET, input_names=names, output_names=["output"],
                  do_constant_folding=True)
    # Gradients stay enabled while exporting: under no_grad, eval-mode TransformerEncoderLayer
    # takes its fused fast path, which has no ONNX export.
    try:  # PyTorch >= 2.9 defaults to the dynamo exporter; the TorchScript one is what we test
        torch.onnx.export(model, inputs, stem + ".onnx", dynamo=False, **kwargs)
    except TypeError:
        torch.onnx.export(model, inputs, stem + ".onnx", **kwargs)
    with open(stem + ".inputs", "w") as f:
        for n, x in zip(names, inputs):
            np.save("%s.in.%s.npy" % (stem, n), x.cpu().numpy())
            f.write("%s=%s.in.%s.npy\n" % (n, stem, n))
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
