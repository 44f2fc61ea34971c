"""Collage: placement of every operator on the backend that runs it fastest, by measurement."""
from ... import _ffi


def _options(targets, cost_cache, budget_s, max_merge, verbose, device, validate):
    o = _ffi.CollageOptions(targets)
    if device is not None:
        o.device = device
    o.cost_cache = "" if cost_cache is None else cost_cache
    o.budget_s, o.max_merge, o.verbose, o.validate = budget_s, max_merge, verbose, validate
    return o


def CollagePartition(targets, cost_cache=None, budget_s=120.0, max_merge=4, verbose=False, device=None,
                     validate=True):
    """The pass: partitions a module among the backends named by ``targets`` (backend names or
    Targets, whose options the candidates are built with) and the host, choosing per operator by
    measured cost. ``cost_cache``: the persistent cost file (None: the user's cache directory;
    "none": in memory only). ``budget_s``: seconds spent measuring merged candidates.
    ``device``: where candidates are measured (``partita.cuda()``: with Target("cuda") among the
    targets, the operators no backend takes run as generated CUDA). ``validate``: run the search's
    placement and every fixed configuration's (each backend alone, the backends in order and in
    reverse) end to end and return the fastest (times cached with the costs)."""
    return _ffi.CollagePartition(_options(targets, cost_cache, budget_s, max_merge, verbose, device, validate))


def collage_partition(mod, targets, cost_cache=None, budget_s=120.0, max_merge=4, verbose=False, device=None,
                      validate=True):
    """Like the pass, and also returns the placement: ``(mod, partitions, stats)``, where each
    partition is a dict (function, backend, vars, patterns, cost_us, measured) and stats holds
    predicted_us, candidates, measured, cached, measure_s, search_s, boundary_us (per backend),
    chosen (the placement returned), placements (validation: name, predicted_us, measured_us,
    partitions, cached), validate_s, refit_boundary_us (what a partition costs in this model
    beyond its parts, fitted from the placements run), and printable ``summary`` and ``alternatives`` tables."""
    return _ffi.collage_partition(mod, _options(targets, cost_cache, budget_s, max_merge, verbose, device, validate))
