#!/usr/bin/env python3
"""Real-model comparison: Partita (host VM only, oneDNN, oneDNN + OpenBLAS) against ONNX Runtime
(onnxruntime-node) and PyTorch, all with 2 threads, measured in one run.

    bash scripts/setup.sh                                   # builds build/ (Partita)
    apt-get install -y python3-torch python3-torchvision    # PyTorch (Debian)
    (cd benchmarks/ort && ONNXRUNTIME_NODE_INSTALL=skip npm install)
    /usr/bin/python3 benchmarks/models/export.py            # models into benchmarks/models/cache
    /usr/bin/python3 benchmarks/compare.py [--models resnet18,...] [--engines ...]
                                           [--warmup 3] [--repeat 10] [--rounds 3]
                                           [--env KEY=VAL ...]

Every engine runs each model in its own child process (one after another, never concurrently),
so thread pools and OpenMP runtimes do not interfere and environment variables (--env, applied
to every child) take effect. Each child runs `warmup` untimed iterations, then `repeat` timed
ones; `rounds` passes over the engines interleave them so that load from other processes is
shared out fairly, and their latencies are pooled. The table shows the median, the ratio to ONNX Runtime's median (< 1 is faster than ONNX
Runtime; with both onnxruntime engines in the run, to the faster of the two), and the output's error relative to PyTorch's reference saved by export.py:
max |out - ref| / max |ref|. The Partita children also report import / partition / build
times (no C compiler is involved for the dnnl and cblas backends).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CACHE = os.path.join(HERE, "models", "cache")
ORT_RUNNER = os.path.join(HERE, "ort", "run.js")
MODELS = ["resnet18", "resnet50", "mobilenet_v2", "transformer", "mlp"]
# partita-<backends>: the backends joined by "+" in priority order (each is partitioned in turn,
# so the first gets the first pick): partita-cblas+dnnl gives matmuls to OpenBLAS and the rest
# to oneDNN; partita-dnnl+cblas would leave OpenBLAS nothing, as oneDNN matches every matmul.
ENGINES = ["partita-host", "partita-dnnl", "partita-cblas+dnnl", "onnxruntime", "onnxruntime-nospin", "pytorch"]
# Not in the default set: OpenBLAS alone.
EXTRA_ENGINES = ["partita-cblas"]
THREADS = 2


def relative_error(out, ref):
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        return float("inf")
    return float(np.abs(out - ref).max() / np.abs(ref).max())


def timed_runs(fn, warmup, repeat):
    out = None
    for _ in range(warmup):
        out = fn()
    lat = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        lat.append((time.perf_counter() - t0) * 1e3)
    return out, lat


# ---- children -------------------------------------------------------------------------------

def worker_partita(engine, model, x, warmup, repeat):
    import partita
    from partita import relax
    from partita.relax.backend.cpu.cblas import partition_for_cblas
    from partita.relax.backend.cpu.dnnl import partition_for_dnnl
    from partita.relax.frontend.onnx import from_onnx

    times = {}
    clock = [time.perf_counter(), time.process_time()]

    def lap(stage):  # wall and CPU time (the CPU time is what a shared machine cannot inflate)
        wall, cpu = time.perf_counter(), time.process_time()
        times[stage + "_ms"] = (wall - clock[0]) * 1e3
        times[stage + "_cpu_ms"] = (cpu - clock[1]) * 1e3
        clock[:] = [wall, cpu]

    mod = from_onnx(os.path.join(CACHE, model + ".onnx"))
    lap("import")
    targets = []
    partitioners = {"dnnl": partition_for_dnnl, "cblas": partition_for_cblas}
    for backend in engine[len("partita-"):].split("+"):
        if backend == "host":
            continue
        mod = partitioners[backend](mod)
        targets.append(partita.target.Target(backend, {"num_threads": THREADS}))
    lap("partition")
    ex = relax.build(mod, targets or None)
    lap("build")
    vm = relax.VirtualMachine(ex, partita.cpu())
    main = vm["main"]
    lap("load")
    text = mod.script()
    times["partitions"] = {k: text.count('"Codegen": "%s"' % k) for k in ("dnnl", "cblas")}
    out, lat = timed_runs(lambda: main(x), warmup, repeat)
    return np.asarray(out), lat, times


def worker_pytorch(model, x, warmup, repeat):
    import torch
    sys.path.insert(0, os.path.join(HERE, "models"))
    from export import build
    torch.set_num_threads(THREADS)
    net, _ = build(model)  # same seeds as the exported model: same weights
    xt = torch.from_numpy(x)
    with torch.inference_mode():
        out, lat = timed_runs(lambda: net(xt), warmup, repeat)
    return out.numpy(), lat, {"torch": torch.__version__}


def run_worker(args):
    x = np.load(os.path.join(CACHE, args.model + ".input.npy"))
    if args.worker == "pytorch":
        out, lat, info = worker_pytorch(args.model, x, args.warmup, args.repeat)
    else:
        out, lat, info = worker_partita(args.worker, args.model, x, args.warmup, args.repeat)
    np.save(args.out_file, out)
    print(json.dumps({"latencies_ms": lat, "info": info}))


# ---- parent ---------------------------------------------------------------------------------

def child_env(extra):
    env = dict(os.environ)
    # PARTITA_PYTHON_DIR: a folder holding the partita package (e.g. a snapshot of a build, with
    # its libraries on LD_LIBRARY_PATH), instead of <PARTITA_BUILD_DIR or build>/python.
    build_py = os.environ.get("PARTITA_PYTHON_DIR") or os.path.join(
        ROOT, os.environ.get("PARTITA_BUILD_DIR", "build"), "python")
    env["PYTHONPATH"] = build_py + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def measure(engine, model, args, env, tmp):
    out_file = os.path.join(tmp, "%s.%s.npy" % (model, engine))
    if engine.startswith("onnxruntime"):
        out_dir = os.path.join(tmp, "ort-" + model)
        os.makedirs(out_dir, exist_ok=True)
        cmd = ["node", ORT_RUNNER, os.path.join(CACHE, model + ".onnx"),
               "--input", "input=" + os.path.join(CACHE, model + ".input.npy"),
               "--threads", str(THREADS), "--warmup", str(args.warmup),
               "--repeat", str(args.repeat), "--out", out_dir] + (
                   ["--no-spin"] if engine == "onnxruntime-nospin" else [])
        out_file = os.path.join(out_dir, "0.npy")
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", engine, "--model", model,
               "--warmup", str(args.warmup), "--repeat", str(args.repeat),
               "--out-file", out_file]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    if proc.returncode != 0:
        lines = [l for l in (proc.stderr or proc.stdout).strip().splitlines() if l.strip()]
        return {"error": lines[-1] if lines else "exit %d" % proc.returncode}
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["median_ms"] = statistics.median(res["latencies_ms"])
    res["output"] = np.load(out_file)
    warnings = [l for l in proc.stderr.splitlines() if "warn" in l.lower()]
    if warnings:
        res["warnings"] = sorted(set(warnings))
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description="Partita vs ONNX Runtime vs PyTorch on real models")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help="from %s" % ", ".join(ENGINES + EXTRA_ENGINES))
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per engine and round")
    ap.add_argument("--rounds", type=int, default=3,
                    help="passes over the engines per model; the latencies of all rounds are pooled")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per child")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VAL",
                    help="environment variable for every child (repeatable)")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--table-from", metavar="JSON", help="print the table of an earlier --json")
    # child mode
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--out-file", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return run_worker(args)
    if args.table_from:
        with open(args.table_from) as f:
            data = json.load(f)
        results = {tuple(k.split("/", 1)): v for k, v in data.items()}
        print_table(results, args.models.split(","), args.engines.split(","))
        return 0

    env = child_env(dict(kv.split("=", 1) for kv in args.env))
    engines = args.engines.split(",")
    print("date: %s" % time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    print("load: %s" % open("/proc/loadavg").read().strip())
    print("env:  %s" % (" ".join(args.env) or "(none added)"))
    print("warmup %d, repeat %d, rounds %d, %d threads" % (args.warmup, args.repeat, args.rounds, THREADS))
    results = {}
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            path = os.path.join(CACHE, model + ".onnx")
            if not os.path.exists(path):
                failures.append((model, "-", "missing %s: run benchmarks/models/export.py" % path))
                continue
            ref = np.load(os.path.join(CACHE, model + ".ref.npy"))
            # Rounds interleave the engines, so a burst of load from other processes lands on
            # all of them rather than on whichever happened to run then; latencies are pooled.
            for rnd in range(args.rounds):
                for engine in engines:
                    if (model, engine) in results and "error" in results[(model, engine)]:
                        continue
                    t0 = time.perf_counter()
                    try:
                        res = measure(engine, model, args, env, tmp)
                    except subprocess.TimeoutExpired:
                        res = {"error": "timed out after %d s" % args.timeout}
                    if "error" in res:
                        failures.append((model, engine, res["error"]))
                    else:
                        res["rel_err"] = relative_error(res.pop("output"), ref)
                    prev = results.get((model, engine))
                    if prev is not None and "error" not in res:
                        res["latencies_ms"] = prev["latencies_ms"] + res["latencies_ms"]
                        res["median_ms"] = statistics.median(res["latencies_ms"])
                        res["rel_err"] = max(res["rel_err"], prev["rel_err"])
                    results[(model, engine)] = res
                    print("  %-13s %-19s round %d: %s (%.0f s)" % (
                        model, engine, rnd + 1, "%.2f ms" % res["median_ms"] if "median_ms" in res
                        else "FAILED", time.perf_counter() - t0), file=sys.stderr)
    print("load after: %s" % open("/proc/loadavg").read().strip())
    print_table(results, args.models.split(","), engines)
    for (model, engine), res in results.items():
        for w in res.get("warnings", []):
            print("warning (%s, %s): %s" % (model, engine, w))
    if failures:
        print("\nfailures:")
        for model, engine, err in failures:
            print("  %s / %s: %s" % (model, engine, err))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"%s/%s" % k: {kk: vv for kk, vv in v.items()} for k, v in results.items()},
                      f, indent=1)
    return 1 if failures else 0


def print_table(results, models, engines):
    print("\nmedian latency in ms (ratio to ONNX Runtime's faster configuration in this run; "
          "max rel. error vs PyTorch reference)")
    head = "| model | " + " | ".join(engines) + " |"
    print(head)
    print("|" + "---|" * (len(engines) + 1))
    for model in models:
        orts = [results.get((model, e), {}).get("median_ms")
                for e in ("onnxruntime", "onnxruntime-nospin")]
        orts = [m for m in orts if m is not None]
        ort = min(orts) if orts else None
        cells = []
        for engine in engines:
            res = results.get((model, engine))
            if res is None:
                cells.append("-")
            elif "error" in res:
                cells.append("FAILED")
            else:
                ratio = " (%.2fx)" % (res["median_ms"] / ort) if ort else ""
                cells.append("%.2f%s; %.1e" % (res["median_ms"], ratio, res["rel_err"]))
        print("| %s | %s |" % (model, " | ".join(cells)))
    print("\ncompile times in ms, wall (CPU): import / partition / build / VM load; partitions")
    for (model, engine), res in results.items():
        info = res.get("info", {})
        if "import_ms" in info:
            stages = ("import", "partition", "build", "load")
            cells = ["%.0f (%.0f)" % (info[s + "_ms"], info.get(s + "_cpu_ms", float("nan")))
                     for s in stages]
            total = sum(info[s + "_ms"] for s in stages[:3])
            total_cpu = sum(info.get(s + "_cpu_ms", float("nan")) for s in stages[:3])
            print("  %-13s %-19s %s  total %.0f (%.0f)  partitions %s" % (
                model, engine, " / ".join(cells), total, total_cpu, info["partitions"]))


if __name__ == "__main__":
    sys.exit(main())
