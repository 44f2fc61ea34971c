#!/usr/bin/env python3
"""Checks the model zoo end to end: every exported model imports, partitions, builds and runs,
and its output matches PyTorch's reference within a relative error of 1e-4.

    PYTHONPATH=build/python /usr/bin/python3 benchmarks/models/check.py
        [--models NAME,...] [--opsets 17,13] [--backends cblas,dnnl] [--backends dnnl] ...
        [--tolerance 1e-4]

--backends lists the backends in partitioning order (the first gets the first pick:
"cblas,dnnl" is partition_for_dnnl(partition_for_cblas(mod))); "host" runs on the VM alone;
"auto:dnnl,cblas" places by measurement (relax.transform.collage_partition);
repeat the option for several configurations (default: cblas,dnnl). Each model runs in its own
child process, so a crash is reported as that model's failure. Prints one line per model,
opset and configuration: the relative error max|out - ref| / max|ref|, the compile time
(import + partition + build) and the number of partitions per backend; exits 1 if any fails.
Run benchmarks/models/export.py first.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export  # noqa: E402

THREADS = 2


def relative_error(out, ref):
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        return float("inf")
    return float(np.abs(out - ref).max() / np.abs(ref).max())


def worker(model, opset, backends, cache):
    import partita
    from partita import relax
    import partita.relax.backend.cpu as cpu_backends
    from partita.relax.frontend.onnx import from_onnx

    times = {}
    t = time.perf_counter()
    mod = from_onnx(export.model_file(model, opset, cache))
    times["import_ms"] = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    targets = []
    if backends and backends[0].startswith("auto"):  # "auto:dnnl,cblas": placement by measurement
        names = [b for b in [backends[0][5:]] + list(backends[1:]) if b]
        targets = [partita.target.Target(b, {"num_threads": THREADS}) for b in names]
        mod = relax.transform.collage_partition(mod, targets)[0]
        backends = names
    for b in ([] if targets else backends):
        if b == "host":
            continue
        # The backend's own wrapper, TVM's partition_for_<name> (dnnl, cblas).
        mod = getattr(getattr(cpu_backends, b), "partition_for_" + b)(mod)
        targets.append(partita.target.Target(b, {"num_threads": THREADS}))
    times["partition_ms"] = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    ex = relax.build(mod, targets or None)
    times["build_ms"] = (time.perf_counter() - t) * 1e3
    vm = relax.VirtualMachine(ex, partita.cpu())
    inputs = [x for _, x in export.load_inputs(model, cache)]
    out = np.asarray(vm["main"](*inputs))
    text = mod.script()
    parts = {b: text.count('"Codegen": "%s"' % b) for b in backends if b != "host"}
    ref = np.load(os.path.join(cache, model + ".ref.npy"))
    return {"rel_err": relative_error(out, ref), "times": times, "partitions": parts}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(export.ZOO))
    ap.add_argument("--opsets", default="17,13")
    ap.add_argument("--backends", action="append", help="e.g. cblas,dnnl (repeatable)")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--cache", default=export.DEFAULT_OUT)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--worker", nargs=3, metavar=("MODEL", "OPSET", "BACKENDS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        model, opset, backends = args.worker
        print(json.dumps(worker(model, int(opset), backends.split(","), args.cache)))
        return 0
    configs = args.backends or ["cblas,dnnl"]
    results, failed = [], False
    for model in args.models.split(","):
        for opset in (int(o) for o in args.opsets.split(",")):
            for config in configs:
                cmd = [sys.executable, os.path.abspath(__file__), "--cache", args.cache,
                       "--worker", model, str(opset), config]
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True,
                                          timeout=args.timeout)
                    if proc.returncode != 0:
                        lines = [l for l in (proc.stderr or proc.stdout).splitlines() if l.strip()]
                        res = {"error": (lines[-1] if lines else "exit %d" % proc.returncode)[:400]}
                    else:
                        res = json.loads(proc.stdout.strip().splitlines()[-1])
                except subprocess.TimeoutExpired:
                    res = {"error": "timed out after %d s" % args.timeout}
                res.update(model=model, opset=opset, backends=config)
                results.append(res)
                if "error" in res:
                    failed = True
                    line = "FAILED: " + res["error"]
                else:
                    ok = res["rel_err"] <= args.tolerance
                    failed |= not ok
                    t = res["times"]
                    line = "%s rel. error %.1e  compile %.0f ms (import %.0f, partition %.0f, " \
                           "build %.0f)  partitions %s" % (
                               "ok  " if ok else "BAD ", res["rel_err"],
                               t["import_ms"] + t["partition_ms"] + t["build_ms"], t["import_ms"],
                               t["partition_ms"], t["build_ms"], res["partitions"])
                print("%-26s opset %d  %-12s %s" % (model, opset, config, line), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
