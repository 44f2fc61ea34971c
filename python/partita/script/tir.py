"""``T``: symbolic integers inside TVMScript (``n = T.int64()``), read by the C++ parser."""


def __getattr__(name):
    from ._sugar import Placeholder
    return Placeholder(f"T.{name}")
