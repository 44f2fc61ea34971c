"""Names used inside TVMScript source evaluate to inert placeholders in Python: annotations
such as ``R.Tensor((n, 4), "float32")`` are evaluated when Python defines a function, but only
the C++ parser gives them meaning."""


class Placeholder:
    """Accepts any call, attribute, subscript or arithmetic and returns itself."""

    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Placeholder(f"{self._name}.{name}")

    def __getitem__(self, item):
        return self

    def __repr__(self):
        return f"<TVMScript {self._name}>"
