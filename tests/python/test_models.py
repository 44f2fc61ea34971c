"""The bundled real model (models/mobilenet_v2_small.onnx, a torchvision MobileNetV2 exported
with random weights): imported from ONNX, partitioned for oneDNN then OpenBLAS, built, run, and
compared with the PyTorch output saved beside it; also run on the host VM alone."""
import os

import numpy as np
import pytest

import partita
from partita import relax
from partita.relax.backend.cpu.cblas import partition_for_cblas
from partita.relax.backend.cpu.dnnl import partition_for_dnnl
from partita.relax.frontend.onnx import from_onnx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "models", "mobilenet_v2_small")
TOLERANCE = 1e-4


def relative_error(out, ref):
    """max |out - ref| / max |ref|: the error relative to the output's scale (elementwise
    relative error is meaningless for logits near zero)."""
    out = np.asarray(out)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    return float(np.abs(out - ref).max() / np.abs(ref).max())


@pytest.fixture(scope="module")
def model():
    x = np.load(MODEL + ".input.npy")
    ref = np.load(MODEL + ".ref.npy")
    assert x.shape == (1, 3, 96, 96) and ref.shape == (1, 100)
    assert np.abs(ref).max() > 0 and ref.std() > 0  # a degenerate reference would prove nothing
    return from_onnx(MODEL + ".onnx"), x, ref


def test_bundled_model_on_dnnl_and_cblas(model, tmp_path):
    mod, x, ref = model
    part = partition_for_cblas(partition_for_dnnl(mod))
    text = part.script()
    # Every convolution (regular and depthwise) is offloaded: none is left for the host.
    assert '"Codegen": "dnnl"' in text
    main = text[text.index("def main("):]
    main = main[:main.index("# Metadata")] if "# Metadata" in main else main
    assert "R.nn.conv2d" not in main and "R.clip" not in main
    ex = relax.build(part, [partita.target.Target("dnnl", {"num_threads": 2}), "cblas"])
    assert "dnnl" in ex.external_module_kinds
    out = relax.VirtualMachine(ex, partita.cpu())["main"](x)
    assert relative_error(out, ref) <= TOLERANCE
    # The same model through one exported artifact, loaded back.
    path = str(tmp_path / "mobilenet_v2_small.partita")
    ex.export_library(path)
    vm = relax.VirtualMachine(partita.runtime.load_module(path))
    assert relative_error(vm["main"](x), ref) <= TOLERANCE


def test_bundled_model_on_host_vm(model):
    mod, x, ref = model
    out = relax.VirtualMachine(relax.build(mod), partita.cpu())["main"](x)
    assert relative_error(out, ref) <= TOLERANCE


def test_other_input_differs_from_reference(model):
    # Guards the comparison itself: a different input must not meet the tolerance.
    mod, x, ref = model
    out = relax.VirtualMachine(relax.build(mod), partita.cpu())["main"](x[:, ::-1].copy())
    assert relative_error(out, ref) > TOLERANCE
