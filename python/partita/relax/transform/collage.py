"""Collage: placement of every operator on the backend that runs it fastest, by measurement."""
from ... import _ffi


def _options(targets, cost_cache, budget_s, max_merge, verbose, device):
    o = _ffi.CollageOptions(targets)
    if device is not None:
        o.device = device
    o.cost_cache = "" if cost_cache is None else cost_cache
    o.budget_s, o.max_merge, o.verbose = budget_s, max_merge, verbose
    return o


def CollagePartition(targets, cost_cache=None, budget_s=120.0, max_merge=4, verbose=False, device=None):
    """The pass: partitions a module among the backends named by ``targets`` (backend names or
    Targets, whose options the candidates are built with) and the host, choosing per operator by
    measured cost. ``cost_cache``: the persistent cost file (None: the user's cache directory;
    "none": in memory only). ``budget_s``: seconds spent measuring merged candidates.
    ``device``: where candidates are measured (``partita.cuda()``: with Target("cuda") among the
    targets, the operators no backend takes run as generated CUDA)."""
    return _ffi.CollagePartition(_options(targets, cost_cache, budget_s, max_merge, verbose, device))


def collage_partition(mod, targets, cost_cache=None, budget_s=120.0, max_merge=4, verbose=False, device=None):
    """Like the pass, and also returns the placement: ``(mod, partitions, stats)``, where each
    partition is a dict (function, backend, vars, patterns, cost_us, measured) and stats holds
    predicted_us, candidates, measured, cached, measure_s, search_s, and printable ``summary``
    and ``alternatives`` tables."""
    return _ffi.collage_partition(mod, _options(targets, cost_cache, budget_s, max_merge, verbose, device))
