"""Importing the backend wrapper modules that the build installed into a package folder."""
import importlib
import pkgutil


def import_submodules(package, path):
    """Imports every module of ``package`` (whose ``__path__`` is ``path``) in name order and
    returns their names; a backend left out of the build simply has no module here."""
    names = sorted(m.name for m in pkgutil.iter_modules(path) if not m.name.startswith("_"))
    for name in names:
        importlib.import_module(f"{package}.{name}")
    return names
