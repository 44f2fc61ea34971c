"""``relax.transform.ToMixedPrecision`` with TVM's signature."""
from ... import _ffi


def ToMixedPrecision(out_dtype="float32", fp16_input_names=None):  # noqa: N802 - TVM's spelling
    """float16 compute with ``out_dtype`` accumulation in matmul/convolutions, TVM's policies
    elsewhere (see ``include/partita/transform/to_mixed_precision.h``); parameters named in
    ``fp16_input_names`` are taken in float16."""
    return _ffi.ToMixedPrecision(str(out_dtype), list(fp16_input_names or []))
