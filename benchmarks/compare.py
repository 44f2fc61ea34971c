#!/usr/bin/env python3
"""The model zoo on Partita against ONNX Runtime and PyTorch, all with 2 threads, in one run.

    bash scripts/setup.sh                                      # builds build/ (Partita)
    apt-get install -y python3-torch python3-torchvision       # PyTorch (Debian)
    /usr/bin/python3 -m venv --system-site-packages benchmarks/.venv   # ONNX Runtime from PyPI,
    benchmarks/.venv/bin/pip install onnxruntime                       # for benchmarks only
    /usr/bin/python3 benchmarks/models/export.py               # the zoo into benchmarks/models/cache
    /usr/bin/python3 benchmarks/compare.py [--models resnet18,...] [--engines ...] [--opset 17]
                                           [--warmup 3] [--repeat 10] [--rounds 3]
                                           [--env KEY=VAL ...] [--json FILE]

Every engine runs each model in its own child process (one after another, never concurrently),
so thread pools and OpenMP runtimes do not interfere and environment variables (--env, applied
to every child) take effect. ONNX Runtime's child runs in the virtual environment's Python
(--ort-python, default benchmarks/.venv/bin/python: its pip-installed protobuf must not shadow
Debian's for the other children), the others in this script's. Each child runs `warmup` untimed
iterations, then `repeat` timed ones; `rounds` passes over the engines interleave them, so
that load from other processes is shared out fairly, and their latencies are pooled.

The table shows each engine's median latency, the interquartile range of its pooled latencies
(the spread: 25th to 75th percentile) and the ratio of its median to ONNX Runtime's (< 1 is faster;
with both onnxruntime engines in the run, to the faster of the two) with the output's error
relative to PyTorch's reference saved by export.py (max |out - ref| / max |ref|), then the
geometric mean of every engine's ratios over the models, and Partita's compile times (import +
partition + build; no C compiler is involved for the dnnl and cblas backends). The header says
on which CPU it ran.
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "models"))
import export  # noqa: E402  (benchmarks/models/export.py: the zoo, its files and inputs)

CACHE = export.DEFAULT_OUT
DEFAULT_ORT_PYTHON = os.path.join(HERE, ".venv", "bin", "python")
# partita-<backends>: the backends joined by "+" in priority order (each is partitioned in turn,
# so the first gets the first pick): partita-cblas+dnnl gives matmuls to OpenBLAS and the rest
# to oneDNN, which is partition_for_dnnl(partition_for_cblas(mod)).
ENGINES = ["partita-dnnl", "partita-cblas+dnnl", "onnxruntime", "pytorch"]
EXTRA_ENGINES = ["partita-host", "partita-cblas", "partita-dnnl+cblas", "onnxruntime-nospin"]
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


def cpu_description():
    """"Intel(R) Xeon(R) Processor, 2 CPUs, AVX2 + AVX-512 + AMX" from /proc/cpuinfo."""
    model, flags = platform.processor() or "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    isa = [name for flag, name in (("avx2", "AVX2"), ("avx512f", "AVX-512"), ("amx_tile", "AMX"))
           if flag in flags]
    return "%s, %d CPUs%s" % (model, os.cpu_count() or 0, ", " + " + ".join(isa) if isa else "")


# ---- children -------------------------------------------------------------------------------

def worker_partita(engine, model_path, inputs, warmup, repeat):
    import partita
    from partita import relax
    import partita.relax.backend.cpu as cpu_backends
    from partita.relax.frontend.onnx import from_onnx

    times = {}
    clock = [time.perf_counter(), time.process_time()]

    def lap(stage):  # wall and CPU time (the CPU time is what a shared machine cannot inflate)
        wall, cpu = time.perf_counter(), time.process_time()
        times[stage + "_ms"] = (wall - clock[0]) * 1e3
        times[stage + "_cpu_ms"] = (cpu - clock[1]) * 1e3
        clock[:] = [wall, cpu]

    mod = from_onnx(model_path)
    lap("import")
    targets = []
    for backend in engine[len("partita-"):].split("+"):
        if backend == "host":
            continue
        # The backend's own wrapper, TVM's partition_for_<name> (dnnl, cblas).
        mod = getattr(getattr(cpu_backends, backend), "partition_for_" + backend)(mod)
        targets.append(partita.target.Target(backend, {"num_threads": THREADS}))
    lap("partition")
    ex = relax.build(mod, targets or None)
    lap("build")
    main = relax.VirtualMachine(ex, partita.cpu())["main"]
    lap("load")
    text = mod.script()
    times["partitions"] = {k: text.count('"Codegen": "%s"' % k) for k in ("dnnl", "cblas")}
    out, lat = timed_runs(lambda: main(*inputs), warmup, repeat)
    return np.asarray(out), lat, times


def worker_onnxruntime(engine, model_path, names, inputs, warmup, repeat):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Without spinning, ONNX Runtime's threads sleep between operators (its analogue of
    # OMP_WAIT_POLICY=passive).
    so.add_session_config_entry("session.intra_op.allow_spinning",
                                "0" if engine == "onnxruntime-nospin" else "1")
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    feed = dict(zip(names, inputs))
    out, lat = timed_runs(lambda: sess.run(None, feed)[0], warmup, repeat)
    return np.asarray(out), lat, {"onnxruntime": ort.__version__}


def worker_pytorch(model, inputs, warmup, repeat):
    import torch
    torch.set_num_threads(THREADS)
    net, _, _ = export.build_with_inputs(model)  # same seeds as the exported model: same weights
    xs = [torch.from_numpy(x) for x in inputs]
    with torch.inference_mode():
        out, lat = timed_runs(lambda: net(*xs), warmup, repeat)
    return out.numpy(), lat, {"torch": torch.__version__}


def run_worker(args):
    named = export.load_inputs(args.model, CACHE)
    names, inputs = [n for n, _ in named], [x for _, x in named]
    path = export.model_file(args.model, args.opset, CACHE)
    if args.worker == "pytorch":
        out, lat, info = worker_pytorch(args.model, inputs, args.warmup, args.repeat)
    elif args.worker.startswith("onnxruntime"):
        out, lat, info = worker_onnxruntime(args.worker, path, names, inputs, args.warmup, args.repeat)
    else:
        out, lat, info = worker_partita(args.worker, path, inputs, args.warmup, args.repeat)
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
    python = args.ort_python if engine.startswith("onnxruntime") else sys.executable
    cmd = [python, os.path.abspath(__file__), "--worker", engine, "--model", model,
           "--opset", str(args.opset), "--warmup", str(args.warmup), "--repeat", str(args.repeat),
           "--out-file", out_file]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    if proc.returncode != 0:
        lines = [l for l in (proc.stderr or proc.stdout).strip().splitlines() if l.strip()]
        return {"error": (lines[-1] if lines else "exit %d" % proc.returncode)[:300]}
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["median_ms"] = statistics.median(res["latencies_ms"])
    res["output"] = np.load(out_file)
    warnings = [l for l in proc.stderr.splitlines() if "warn" in l.lower()]
    if warnings:
        res["warnings"] = sorted(set(warnings))
    return res


def ort_median(results, model):
    orts = [results.get((model, e), {}).get("median_ms") for e in ("onnxruntime", "onnxruntime-nospin")]
    orts = [m for m in orts if m is not None]
    return min(orts) if orts else None


def main(argv=None):
    ap = argparse.ArgumentParser(description="Partita vs ONNX Runtime vs PyTorch on the model zoo")
    ap.add_argument("--models", default=",".join(export.ZOO))
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help="from %s" % ", ".join(ENGINES + EXTRA_ENGINES))
    ap.add_argument("--opset", type=int, default=export.OPSETS[0], help="which export of the models")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per engine and round")
    ap.add_argument("--rounds", type=int, default=3,
                    help="passes over the engines per model; the latencies of all rounds are pooled")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per child")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VAL",
                    help="environment variable for every child (repeatable)")
    ap.add_argument("--ort-python", default=os.environ.get("ORT_PYTHON", DEFAULT_ORT_PYTHON),
                    help="the Python with onnxruntime installed (default: %(default)s)")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--table-from", metavar="JSON", help="print the table of an earlier --json")
    # child mode
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--out-file", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return run_worker(args)
    models, engines = args.models.split(","), args.engines.split(",")
    if args.table_from:
        with open(args.table_from) as f:
            data = json.load(f)
        results = {tuple(k.split("/", 1)): v for k, v in data["results"].items()}
        print_table(results, models, engines)
        return 0
    unknown = [e for e in engines if e not in ENGINES + EXTRA_ENGINES]
    if unknown:
        ap.error("unknown engines %s (known: %s)" % (", ".join(unknown), ", ".join(ENGINES + EXTRA_ENGINES)))
    if any(e.startswith("onnxruntime") for e in engines) and not os.path.exists(args.ort_python):
        ap.error("%s not found: make the environment with\n  /usr/bin/python3 -m venv "
                 "--system-site-packages benchmarks/.venv && benchmarks/.venv/bin/pip install "
                 "onnxruntime" % args.ort_python)

    env = child_env(dict(kv.split("=", 1) for kv in args.env))
    header = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cpu": cpu_description(),
              "command": " ".join([os.path.relpath(__file__, ROOT)] + (argv if argv is not None else sys.argv[1:])),
              "load": open("/proc/loadavg").read().strip()}
    print("date: %s" % header["date"])
    print("cpu:  %s" % header["cpu"])
    print("load: %s" % header["load"])
    print("env:  %s" % (" ".join(args.env) or "(none added)"))
    print("opset %d, warmup %d, repeat %d, rounds %d, %d threads" % (
        args.opset, args.warmup, args.repeat, args.rounds, THREADS))
    results, failures = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            path = export.model_file(model, args.opset, CACHE)
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
                    print("  %-26s %-19s round %d: %s (%.0f s)" % (
                        model, engine, rnd + 1, "%.2f ms" % res["median_ms"] if "median_ms" in res
                        else "FAILED", time.perf_counter() - t0), file=sys.stderr, flush=True)
    print("load after: %s" % open("/proc/loadavg").read().strip())
    print_table(results, models, engines)
    for (model, engine), res in results.items():
        for w in res.get("warnings", []):
            print("warning (%s, %s): %s" % (model, engine, w))
    if failures:
        print("\nfailures:")
        for model, engine, err in failures:
            print("  %s / %s: %s" % (model, engine, err))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header,
                       "results": {"%s/%s" % k: v for k, v in results.items()}}, f, indent=1)
    return 1 if failures else 0


def quartiles(values):
    """The 25th and 75th percentiles (linear interpolation), the spread the table shows."""
    v = sorted(values)
    def at(q):
        x = q * (len(v) - 1)
        lo = int(math.floor(x))
        hi = min(lo + 1, len(v) - 1)
        return v[lo] + (v[hi] - v[lo]) * (x - lo)
    return at(0.25), at(0.75)


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def print_table(results, models, engines):
    print("\nmedian latency in ms [interquartile range of the pooled runs] (ratio of the medians to "
          "ONNX Runtime's in this run; max rel. error vs the PyTorch reference)")
    print("| model | " + " | ".join(engines) + " |")
    print("|" + "---|" * (len(engines) + 1))
    ratios = {e: [] for e in engines}
    for model in models:
        ort = ort_median(results, model)
        cells = []
        for engine in engines:
            res = results.get((model, engine))
            if res is None:
                cells.append("-")
            elif "error" in res:
                cells.append("FAILED")
            else:
                ratio = ""
                if ort:
                    ratios[engine].append(res["median_ms"] / ort)
                    ratio = " (%.2fx)" % ratios[engine][-1]
                q1, q3 = quartiles(res["latencies_ms"])
                cells.append("%.2f [%.2f–%.2f]%s; %.1e" % (res["median_ms"], q1, q3, ratio, res["rel_err"]))
        print("| %s | %s |" % (model, " | ".join(cells)))
    print("| geometric mean of the ratios | %s |" % " | ".join(
        "%.2fx (%d models)" % (geometric_mean(ratios[e]), len(ratios[e])) if ratios[e] else "-"
        for e in engines))
    compile_rows = [(m, e, r["info"]) for (m, e), r in results.items() if "import_ms" in r.get("info", {})]
    if not compile_rows:
        return
    print("\nPartita's compile time in ms, wall (CPU): import + partition + build = total; VM load; "
          "partitions")
    print("| model | engine | import | partition | build | total | load | partitions |")
    print("|---|---|---|---|---|---|---|---|")
    for model, engine, info in sorted(compile_rows, key=lambda r: (models.index(r[0]) if r[0] in models else 0, r[1])):
        cell = lambda s: "%.0f (%.0f)" % (info[s + "_ms"], info.get(s + "_cpu_ms", float("nan")))
        total = sum(info[s + "_ms"] for s in ("import", "partition", "build"))
        total_cpu = sum(info.get(s + "_cpu_ms", float("nan")) for s in ("import", "partition", "build"))
        parts = ", ".join("%s %d" % kv for kv in info["partitions"].items() if kv[1])
        print("| %s | %s | %s | %s | %s | %.0f (%.0f) | %s | %s |" % (
            model, engine, cell("import"), cell("partition"), cell("build"), total, total_cpu,
            cell("load"), parts or "-"))


if __name__ == "__main__":
    sys.exit(main())
