#!/usr/bin/env python3
"""Collage against fixed placements on the zoo's models, on this CPU.

For each model: compiles it with every fixed configuration (each backend alone and the
priority lists cblas,dnnl and dnnl,cblas) and with placement by measurement
(--backends auto:dnnl,cblas), then runs all artifacts in interleaved rounds (partita run,
median latency per round) and prints the medians, their spread over rounds, the ratio of the
best fixed configuration to Collage, Collage's placement time with a cold and a warm cost cache,
and its predicted time against the measured one.

    /usr/bin/python3 benchmarks/collage.py [--models resnet18,mobilenet_v3_small] [--rounds 5]

Models come from benchmarks/models/cache (benchmarks/models/export.py makes them; --models-dir
reads them from elsewhere). The cost cache is <models dir>/collage_costs (--cost-dir; removed
first with --cold). Collage's own validation (the search's placement against every fixed
configuration, end to end, in the compile) is part of its placement time; what it chose and
measured is printed next to the separate interleaved runs.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CACHE = os.path.join(HERE, "models", "cache")
FIXED = ["dnnl", "cblas", "cblas,dnnl", "dnnl,cblas"]
AUTO = "auto:dnnl,cblas"


def cli(partita, *args, env=None):
    res = subprocess.run([partita, *map(str, args)], capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"partita {' '.join(map(str, args))} failed:\n{res.stderr[-2000:]}")
    return res.stdout


def compile_all(partita, model, workdir, env):
    arts, info = {}, {}
    for cfg in FIXED + [AUTO]:
        art = os.path.join(workdir, re.sub(r"[^a-z]+", "_", cfg) + ".partita")
        t0 = time.perf_counter()
        out = cli(partita, "compile", model, "--backends", cfg, "-o", art, env=env)
        seconds = time.perf_counter() - t0
        arts[cfg] = art
        if cfg == AUTO:
            m = re.search(r"predicted (\S+) us", out)
            info["predicted_ms"] = float(m.group(1)) / 1000 if m else float("nan")
            m = re.search(r"validation \((\S+) s.*\): chosen (\S+), measured (\S+) us", out)
            info["chosen"], info["validated_ms"] = (m.group(2), float(m.group(3)) / 1000) if m else ("?", float("nan"))
            m = re.search(r"\((\S+) of operators, (\S+) of entering", out)
            info["boundary_ms"] = float(m.group(2)) / 1000 if m else float("nan")
            info["cold_s"] = seconds
            t0 = time.perf_counter()
            out = cli(partita, "compile", model, "--backends", cfg, "-o", art, env=env)
            info["warm_s"] = time.perf_counter() - t0
            m = re.search(r"validation \((\S+) s.*\): chosen (\S+), measured (\S+) us", out)
            if m and m.group(2) != info["chosen"]:  # the artifact run is the warm compile's
                info["chosen"] += f", warm: {m.group(2)}"

    return arts, info


def median_ms(partita, art, repeat):
    out = cli(partita, "run", art, "--repeat", repeat, "--show", 0)
    return float(re.search(r"median (\S+) ms", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="", help="comma-separated names (default: every model in the cache)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20, help="runs per round")
    ap.add_argument("--partita", default=os.path.join(ROOT, "build", "partita"))
    ap.add_argument("--cold", action="store_true", help="start from an empty cost cache")
    ap.add_argument("--models-dir", default=CACHE, help="where the .onnx files are")
    ap.add_argument("--cost-dir", default="", help="the cost cache's directory (default: <models dir>/collage_costs)")
    a = ap.parse_args()
    names = [m for m in a.models.split(",") if m] or sorted(
        f[:-5] for f in os.listdir(a.models_dir) if f.endswith(".onnx") and ".opset" not in f)
    env = dict(os.environ, XDG_CACHE_HOME=a.cost_dir or os.path.join(a.models_dir, "collage_costs"))
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {cpu}, {os.cpu_count()} CPUs; "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if a.cold:
        shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)
    print(f"{'model':<24} {'config':<16} {'median ms':>10} {'spread':>8}")
    summary = []
    for name in names:
        with tempfile.TemporaryDirectory() as work:
            try:
                arts, info = compile_all(a.partita, os.path.join(a.models_dir, name + ".onnx"), work, env)
            except RuntimeError as e:
                print(f"{name:<24} failed: {str(e).splitlines()[-1]}")
                continue
            rounds = {cfg: [] for cfg in arts}
            for _ in range(a.rounds):  # interleaved: every configuration once per round
                for cfg, art in arts.items():
                    rounds[cfg].append(median_ms(a.partita, art, a.repeat))
            med = {cfg: statistics.median(v) for cfg, v in rounds.items()}
            for cfg, v in rounds.items():
                spread = (max(v) - min(v)) / med[cfg] * 100
                print(f"{name:<24} {cfg:<16} {med[cfg]:>10.3f} {spread:>7.1f}%")
            best = min(FIXED, key=lambda c: med[c])
            ratio = med[best] / med[AUTO]
            pred = info["predicted_ms"]
            print(f"{name:<24} best fixed {best} / auto = {ratio:.2f}x; predicted {pred:.3f} ms vs measured "
                  f"{med[AUTO]:.3f} ms ({(pred - med[AUTO]) / med[AUTO] * 100:+.0f}%; of it entering partitions "
                  f"{info['boundary_ms']:.3f}); placement {info['cold_s']:.1f} s, again {info['warm_s']:.1f} s; "
                  f"validation chose {info['chosen']} ({info['validated_ms']:.3f} ms); "
                  f"load {os.getloadavg()[0]:.2f}")
            summary.append((name, best, ratio))
            sys.stdout.flush()
    if summary:
        geo = statistics.geometric_mean([r for _, _, r in summary])
        print(f"\ngeomean best-fixed / auto over {len(summary)} models: {geo:.2f}x")


if __name__ == "__main__":
    main()
