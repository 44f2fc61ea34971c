"""Pre-defined pass pipelines (``tvm.relax.pipeline``): ``relax.get_pipeline(name)``.

TVM's "zero" pipeline is LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps, FuseTIR.
Partita keeps operators as Relax operators down to its kernels and backends (nothing to
legalize) and reads fusion kinds from the operator registry (nothing to annotate), so its "zero"
pipeline is FoldConstant then FuseOps; FuseTIR's part, turning each "Primitive" group into code,
is done by ``relax.build`` (groups for the host VM run as their operators). TVM's
"default_build" pipeline lowers to VM bytecode, which ``relax.build`` does itself; what it
changes in the module before that, AttachGlobalSymbol, is the pipeline here.
"""
from .. import transform as _tvm_transform
from . import transform


def zero_pipeline(*, enable_warning=False):
    """FoldConstant, FuseOps."""
    del enable_warning
    return _tvm_transform.Sequential([transform.FoldConstant(), transform.FuseOps()], name="zero")


def default_build_pipeline():
    """AttachGlobalSymbol (relax.build lowers the module to the VM itself)."""
    return _tvm_transform.Sequential([transform.AttachGlobalSymbol()], name="default_build")


PIPELINE_MAP = {
    "zero": zero_pipeline,
    "default": default_build_pipeline,
    "default_build": default_build_pipeline,
}


def get_pipeline(name="zero", **kwargs):
    """The pipeline registered as ``name`` (a Pass)."""
    if name not in PIPELINE_MAP:
        raise ValueError(f"Unknown pre-built pipeline {name}, candidates are {list(PIPELINE_MAP)}")
    return PIPELINE_MAP[name](**kwargs)


def register_pipeline(name):
    """Decorator registering a function returning a Pass as pipeline ``name``."""
    if name in PIPELINE_MAP:
        raise ValueError(f"Pipeline {name} has already been registered")

    def register(func):
        PIPELINE_MAP[name] = func
        return func
    return register


__all__ = ["get_pipeline", "register_pipeline", "zero_pipeline", "default_build_pipeline"]
