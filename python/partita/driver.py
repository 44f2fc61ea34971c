"""``tvm.compile`` (TVM >= 0.20): one entry point building a Relax module into an Executable."""


def compile(mod, target=None, *, relax_pipeline=None, tir_pipeline=None):  # noqa: A001 - TVM's name
    """Builds ``mod`` for ``target`` as ``relax.build`` does and returns the Executable
    (``relax.VirtualMachine(ex, dev)`` runs it). ``tir_pipeline`` is accepted for compatibility;
    Partita has no TIR."""
    from .relax.vm import build
    return build(mod, target, relax_pipeline=relax_pipeline, tir_pipeline=tir_pipeline)
