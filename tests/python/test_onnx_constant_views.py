"""Reshapes of constants (conv biases, norm scales) are done at import, not at every run."""
import os

from partita.relax.frontend.onnx import from_onnx

MODEL = os.path.join(os.path.dirname(__file__), "..", "..", "models", "mobilenet_v2_small.onnx")


def test_conv_bias_reshapes_fold_into_constants():
    text = from_onnx(MODEL).script()
    assert 'R.reshape(metadata["relax.expr.Constant"]' not in text
    # The biases still reach the convolutions, as constants of the broadcastable shape.
    assert text.count("R.nn.conv2d(") == 52
    assert text.count("R.reshape(") <= 1  # only the classifier's flatten remains
