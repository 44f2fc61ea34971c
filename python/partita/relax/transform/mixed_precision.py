"""``relax.transform.ToMixedPrecision`` with TVM's signature."""
from ... import _ffi


def ToMixedPrecision(out_dtype="float32", fp16_input_names=None):  # noqa: N802 - TVM's spelling
    """float16 compute with ``out_dtype`` accumulation in matmul/convolutions, TVM's policies
    elsewhere (see ``include/partita/transform/to_mixed_precision.h``).

    ``fp16_input_names`` (parameters already given in float16) is not supported: a non-empty
    list raises ValueError rather than being ignored."""
    if fp16_input_names:
        raise ValueError("ToMixedPrecision: fp16_input_names is not supported by Partita; cast "
                         "those inputs to float32 or leave the parameters float32")
    return _ffi.ToMixedPrecision(str(out_dtype))
