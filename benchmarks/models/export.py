#!/usr/bin/env python3
"""Exports the model zoo from Debian's PyTorch / torchvision (python3-torch, python3-torchvision)
with random (seeded) weights to ONNX, with one random input and PyTorch's output as the reference.

    /usr/bin/python3 benchmarks/models/export.py [--out DIR] [--only NAME,...] [--opsets 13,17]
                                                 [--force] [--list]

For each model NAME it writes, into DIR (default benchmarks/models/cache, not committed):
    NAME.onnx              the model at opset 17
    NAME.opset13.onnx      the same model at opset 13 (one file per opset of --opsets)
    NAME.inputs.npz        its inputs, by graph input name (float32, or int64 token ids)
    NAME.input.npy         the input (single-input models only; what `partita run` reads)
    NAME.ref.npy           PyTorch's output for those inputs (eval mode)
The zoo (ZOO below): the five benchmark models of issue 5 (resnet18, resnet50, mobilenet_v2 at
224x224 batch 1, a 2-layer nn.TransformerEncoder and a 3-layer MLP), ten torchvision
classifiers of issue 10, and more architectures: mobilenet_v3_small, swin_t, maxvit_t, a
segmentation network (lraspp_mobilenet_v3_large: bilinear Resize), a style-transfer network
(reflection padding, InstanceNormalization, nearest Resize), a BERT-style encoder (GELU, an
attention-mask input) and a GPT-style decoder (pre-norm blocks, a causal mask).
"""
import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "cache")
OPSETS = (17, 13)  # the first one is NAME.onnx
SEED = 0

# The five benchmark models, the ten torchvision models of issue 10, and the rest of the zoo.
BENCHMARK = ["resnet18", "resnet50", "mobilenet_v2", "transformer", "mlp"]
TORCHVISION_10 = ["densenet121", "squeezenet1_1", "googlenet", "efficientnet_b0", "mnasnet1_0",
                  "resnext50_32x4d", "shufflenet_v2_x1_0", "regnet_y_400mf", "vit_b_16",
                  "convnext_tiny"]
MORE = ["mobilenet_v3_small", "swin_t", "maxvit_t", "lraspp_mobilenet_v3_large", "style_transfer",
        "bert_encoder", "gpt_decoder"]
ZOO = BENCHMARK + TORCHVISION_10 + MORE
MODELS = ZOO  # the name compare.py and benchmarks/gpu/models.py read
TORCHVISION_CLASSIFIERS = ["resnet18", "resnet50", "mobilenet_v2"] + TORCHVISION_10 + [
    "mobilenet_v3_small", "swin_t", "maxvit_t"]


def model_file(name, opset, out_dir=DEFAULT_OUT):
    """The ONNX file of NAME at OPSET."""
    suffix = "" if opset == OPSETS[0] else ".opset%d" % opset
    return os.path.join(out_dir, name + suffix + ".onnx")


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
    if not bns:
        return
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch_size, *input_shape[1:], generator=gen))
    model.eval()


def randomize_zero_parameters(model, gen):
    """Some architectures start with zero weights (ViT's and Swin's classifier heads, layer
    scales): the output would be the bias whatever the input. Give those small random values,
    as training would."""
    import torch
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.numel() > 1 and not name.endswith("bias") and float(p.abs().max()) == 0.0:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)


def randomize_affine_norms(model, gen):
    """InstanceNorm / LayerNorm affine parameters start at (1, 0): make them random, so that a
    wrong axis or a dropped scale shows in the output."""
    import torch
    norms = (torch.nn.InstanceNorm2d, torch.nn.LayerNorm)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, norms) and getattr(m, "weight", None) is not None:
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)


def style_transfer_net():
    """Johnson et al.'s fast neural style network (as in pytorch/examples): reflection-padded
    convolutions, instance normalization, residual blocks, nearest-neighbour upsampling."""
    import torch
    from torch import nn

    class ConvLayer(nn.Sequential):
        def __init__(self, cin, cout, k, stride):
            super().__init__(nn.ReflectionPad2d(k // 2), nn.Conv2d(cin, cout, k, stride))

    class Residual(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.body = nn.Sequential(ConvLayer(c, c, 3, 1), nn.InstanceNorm2d(c, affine=True),
                                      nn.ReLU(), ConvLayer(c, c, 3, 1),
                                      nn.InstanceNorm2d(c, affine=True))

        def forward(self, x):
            return x + self.body(x)

    class Upsample(nn.Module):
        def __init__(self, cin, cout, k):
            super().__init__()
            self.conv = ConvLayer(cin, cout, k, 1)

        def forward(self, x):
            return self.conv(torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest"))

    def block(cin, cout, k, stride):
        return [ConvLayer(cin, cout, k, stride), nn.InstanceNorm2d(cout, affine=True), nn.ReLU()]

    return nn.Sequential(
        *block(3, 32, 9, 1), *block(32, 64, 3, 2), *block(64, 128, 3, 2),
        *[Residual(128) for _ in range(5)],
        Upsample(128, 64, 3), nn.InstanceNorm2d(64, affine=True), nn.ReLU(),
        Upsample(64, 32, 3), nn.InstanceNorm2d(32, affine=True), nn.ReLU(),
        ConvLayer(32, 3, 9, 1))


class BertEncoder:
    """A BERT-style encoder: token, position and segment embeddings, LayerNorm, 4 post-norm
    nn.TransformerEncoderLayers with GELU (d_model 256, 4 heads, FFN 1024), and the padding mask
    from an attention_mask input (1 = token, 0 = padding), sequence 128."""
    VOCAB, D, HEADS, LAYERS, FFN, SEQ, PADDED = 8192, 256, 4, 4, 1024, 128, 28

    @classmethod
    def build(cls, gen):
        import torch
        from torch import nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.word = nn.Embedding(cls.VOCAB, cls.D)
                self.position = nn.Embedding(512, cls.D)
                self.segment = nn.Embedding(2, cls.D)
                self.norm = nn.LayerNorm(cls.D)
                layer = nn.TransformerEncoderLayer(cls.D, cls.HEADS, cls.FFN, dropout=0.0,
                                                   activation="gelu", batch_first=True)
                self.encoder = nn.TransformerEncoder(layer, cls.LAYERS, enable_nested_tensor=False)

            def forward(self, input_ids, attention_mask):
                positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
                h = self.word(input_ids) + self.position(positions) + self.segment(
                    torch.zeros_like(input_ids))
                return self.encoder(self.norm(h), src_key_padding_mask=attention_mask == 0)

        ids = torch.randint(0, cls.VOCAB, (1, cls.SEQ), generator=gen)
        mask = torch.ones(1, cls.SEQ, dtype=torch.int64)
        mask[:, cls.SEQ - cls.PADDED:] = 0
        return Model(), (ids, mask), ["input_ids", "attention_mask"]


class GptDecoder:
    """A GPT-style decoder: token and position embeddings, 4 pre-norm blocks (d_model 256,
    4 heads, FFN 1024, GELU) with a causal mask sliced from a lower-triangular buffer (as GPT-2
    keeps it), a final LayerNorm and the vocabulary projection, sequence 128."""
    VOCAB, D, HEADS, LAYERS, FFN, SEQ = 8192, 256, 4, 4, 1024, 128

    @classmethod
    def build(cls, gen):
        import torch
        from torch import nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.token = nn.Embedding(cls.VOCAB, cls.D)
                self.position = nn.Embedding(512, cls.D)
                self.register_buffer("causal", torch.tril(torch.ones(512, 512, dtype=torch.bool)))
                layer = nn.TransformerEncoderLayer(cls.D, cls.HEADS, cls.FFN, dropout=0.0,
                                                   activation="gelu", batch_first=True,
                                                   norm_first=True)
                self.blocks = nn.TransformerEncoder(layer, cls.LAYERS, enable_nested_tensor=False)
                self.norm = nn.LayerNorm(cls.D)
                self.head = nn.Linear(cls.D, cls.VOCAB, bias=False)

            def forward(self, input_ids):
                n = input_ids.shape[1]
                positions = torch.arange(n, device=input_ids.device).unsqueeze(0)
                h = self.token(input_ids) + self.position(positions)
                allowed = self.causal[:n, :n]
                mask = torch.zeros(n, n, device=input_ids.device, dtype=h.dtype).masked_fill(~allowed, float("-inf"))
                return self.head(self.norm(self.blocks(h, mask=mask)))

        ids = torch.randint(0, cls.VOCAB, (1, cls.SEQ), generator=gen)
        return Model(), (ids,), ["input_ids"]


def build_with_inputs(name):
    """(torch module in eval mode, tuple of example inputs, their ONNX input names)."""
    import torch
    import torchvision
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    image = (1, 3, 224, 224)
    names = ["input"]
    if name in TORCHVISION_CLASSIFIERS:
        kwargs = {"weights": None}
        if name == "googlenet":
            kwargs.update(aux_logits=False, init_weights=True)
        model = getattr(torchvision.models, name)(**kwargs)
        calibrate_batchnorm(model, image, gen)
        randomize_zero_parameters(model, gen)
        randomize_affine_norms(model, gen)
        inputs = (torch.randn(*image, generator=gen),)
    elif name == "lraspp_mobilenet_v3_large":
        seg = torchvision.models.segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=21)

        class Segmentation(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.seg = seg

            def forward(self, x):
                return self.seg(x)["out"]

        model = Segmentation()
        calibrate_batchnorm(model, image, gen)
        inputs = (torch.randn(*image, generator=gen),)
    elif name == "style_transfer":
        model = style_transfer_net()
        randomize_affine_norms(model, gen)
        inputs = (torch.randn(*image, generator=gen),)
    elif name == "bert_encoder":
        model, inputs, names = BertEncoder.build(gen)
        randomize_affine_norms(model, gen)
    elif name == "gpt_decoder":
        model, inputs, names = GptDecoder.build(gen)
        randomize_affine_norms(model, gen)
    elif name == "transformer":
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                                 dropout=0.0, batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        inputs = (torch.randn(1, 128, 256, generator=gen),)
    elif name == "mlp":
        model = torch.nn.Sequential(
            torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 1024), torch.nn.ReLU())
        inputs = (torch.randn(64, 1024, generator=gen),)
    else:
        raise ValueError("unknown model %r (known: %s)" % (name, ", ".join(ZOO)))
    model.eval()
    return model, inputs, names


def build(name):
    """(torch module in eval mode, example input): the input tensor of a single-input model,
    the tuple of inputs otherwise."""
    model, inputs, _ = build_with_inputs(name)
    return model, inputs[0] if len(inputs) == 1 else inputs


def load_inputs(name, out_dir=DEFAULT_OUT):
    """The saved inputs of NAME as an ordered list of (graph input name, array)."""
    with np.load(os.path.join(out_dir, name + ".inputs.npz")) as z:
        order = [str(n) for n in z["__order__"]]
        return [(n, z[n]) for n in order]


def export(name, out_dir, opsets=OPSETS, force=False):
    """Writes NAME's files; returns the ONNX paths."""
    import torch
    paths = [model_file(name, o, out_dir) for o in opsets]
    ref_path = os.path.join(out_dir, name + ".ref.npy")
    if all(os.path.exists(p) for p in paths) and os.path.exists(ref_path) and not force:
        return paths
    model, inputs, names = build_with_inputs(name)
    # Gradients stay enabled: under no_grad, eval-mode TransformerEncoderLayer takes its fused
    # "fast path" (aten::_transformer_encoder_layer_fwd), which has no ONNX export.
    ref = model(*inputs).detach()
    for opset, path in zip(opsets, paths):
        torch.onnx.export(model, inputs, path, opset_version=opset, input_names=names,
                          output_names=["output"], do_constant_folding=True)
    # The reference must depend on the input, or comparing with it proves little.
    gen = torch.Generator().manual_seed(SEED + 2)
    x0 = inputs[0]
    other_x = (torch.randint(0, int(x0.max()) + 1, x0.shape, generator=gen)
               if x0.dtype == torch.int64 else torch.randn(x0.shape, generator=gen))
    other = model(other_x, *inputs[1:]).detach()
    sensitivity = float((other - ref).abs().max() / ref.abs().max())
    if not math.isfinite(sensitivity) or sensitivity < 1e-2:
        raise RuntimeError("%s: output barely depends on the input (%.2g)" % (name, sensitivity))
    arrays = {n: x.numpy() for n, x in zip(names, inputs)}
    np.savez(os.path.join(out_dir, name + ".inputs.npz"), __order__=np.array(names), **arrays)
    if len(inputs) == 1:
        np.save(os.path.join(out_dir, name + ".input.npy"), inputs[0].numpy())
    np.save(ref_path, ref.numpy().astype(np.float32))
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--only", default=",".join(ZOO), help="comma-separated model names")
    ap.add_argument("--opsets", default=",".join(str(o) for o in OPSETS),
                    help="opsets to export (13 to 17; 17 is NAME.onnx)")
    ap.add_argument("--force", action="store_true", help="re-export models already in --out")
    ap.add_argument("--list", action="store_true", help="print the zoo's model names and exit")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(ZOO))
        return 0
    opsets = tuple(int(o) for o in args.opsets.split(","))
    if OPSETS[0] not in opsets:
        opsets = (OPSETS[0],) + opsets  # NAME.onnx always exists
    os.makedirs(args.out, exist_ok=True)
    failed = False
    for name in args.only.split(","):
        try:
            paths = export(name, args.out, opsets, args.force)
            print("%-26s %s" % (name, ", ".join("%s (%.1f MB)" % (
                os.path.basename(p), os.path.getsize(p) / 1e6) for p in paths)))
        except Exception as e:  # report every model, not only the first failure
            failed = True
            print("%-26s FAILED: %s: %s" % (name, type(e).__name__, e), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
