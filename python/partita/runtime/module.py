"""Timing results (TVM's ``tvm.runtime.module.BenchmarkResult``)."""
import numpy as np


class BenchmarkResult:
    """Run times in seconds: ``results`` (one per repeat, each the mean of ``number`` runs) and
    their ``min``, ``mean``, ``median``, ``max`` and ``std``."""

    def __init__(self, results):
        self.results = list(results)
        if not self.results:
            raise ValueError("BenchmarkResult needs at least one measurement")
        self.mean = float(np.mean(self.results))
        self.std = float(np.std(self.results))
        self.median = float(np.median(self.results))
        self.min = float(np.min(self.results))
        self.max = float(np.max(self.results))

    def __repr__(self):
        return (f"BenchmarkResult(min={self.min}, mean={self.mean}, median={self.median}, "
                f"max={self.max}, std={self.std}, results={self.results})")

    def __str__(self):
        return ("Execution time summary:\n"
                f"{'mean (ms)':^12} {'median (ms)':^12} {'max (ms)':^12} {'min (ms)':^12} {'std (ms)':^12}\n"
                f"{self.mean * 1000:^12.4f} {self.median * 1000:^12.4f} {self.max * 1000:^12.4f} "
                f"{self.min * 1000:^12.4f} {self.std * 1000:^12.4f}")
