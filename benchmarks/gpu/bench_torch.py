#!/usr/bin/env python3
"""PyTorch baselines for the GPU benchmarks: eager and torch.compile on the same models
(benchmarks/gpu/models.py), timed with CUDA events, median (and min-max) of N runs after warm-up.

    python3 benchmarks/gpu/bench_torch.py [--only NAME,...] [--batch 1,32] [--dtype float32,float16]
        [--runs 50] [--compile-mode default] [--json out.jsonl] [--profile N]

One line per (model, batch, dtype, engine) is printed and, with --json, appended as JSON with
the compile time (first call of the compiled module, seconds). TF32 is off for fp32, as
Partita's fp32 is exact fp32; for fp32, eager is also timed with PyTorch's defaults
(`torch-eager-tf32`: torch.backends.cudnn.allow_tf32 is True by default, so cuDNN's
convolutions use TF32 tensor cores; matmuls stay fp32 unless allow_tf32 is set, which we set too).
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402


def time_cuda(fn, xs, runs, warmup=10):
    import torch
    for _ in range(warmup):
        fn(*xs)
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*xs)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2], times[0], times[-1]


def print_kernel_profile(fn, xs, top):
    """The TOP kernels of one run by GPU time (torch.profiler), to compare with `partita run --profile`."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(*xs)
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=top, max_name_column_width=90),
          flush=True)


def time_model(args, name, batch, dtype, out):
    """Times NAME at BATCH in DTYPE with each engine asked for; one line (and JSON row) each."""
    import torch
    model, xs, _ = models.build(name, batch)
    dt = getattr(torch, dtype)
    model, xs = model.cuda().to(dt), models.to_dtype(tuple(x.cuda() for x in xs), dt)
    wanted = args.engines.split(",")
    engines = [("torch-eager", model, 0.0)] if "eager" in wanted else []
    if dtype == "float32" and "eager-tf32" in wanted:
        engines.append(("torch-eager-tf32", model, 0.0))
    if not args.no_compile and "compile" in wanted:
        compiled = torch.compile(model, mode=args.compile_mode)
        t0 = time.perf_counter()
        with torch.no_grad():
            compiled(*xs)
        torch.cuda.synchronize()
        engines.append(("torch-compile", compiled, time.perf_counter() - t0))
    while args.time_after and not os.path.exists(args.time_after):
        time.sleep(1)  # compiled alongside other GPU work; timed only once that work is done
    for engine, fn, compile_s in engines:
        tf32 = engine.endswith("tf32")
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        try:
            with torch.no_grad():
                med, lo, hi = time_cuda(fn, xs, args.runs)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        if args.profile:
            print_kernel_profile(fn, xs, args.profile)
        row = dict(model=name, batch=batch, dtype=dtype, engine=engine, median_ms=med,
                   min_ms=lo, max_ms=hi, compile_s=compile_s)
        print("%-14s b%-3d %-8s %-14s %8.3f ms  [%.3f, %.3f]  compile %.1f s" % (
            name, batch, dtype, engine, med, lo, hi, compile_s), flush=True)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()


def main(argv=None):
    import torch
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(models.MODELS))
    ap.add_argument("--batch", default="1")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--compile-mode", default="default")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--engines", default="eager,eager-tf32,compile",
                    help="which of eager, eager-tf32 (fp32 only), compile to time")
    ap.add_argument("--json")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="after timing, print the N kernels of one run that take the most GPU time")
    ap.add_argument("--time-after", metavar="FILE",
                    help="compile as soon as started, but time only once FILE exists (lets a long "
                         "torch.compile overlap other work on the machine without that work in its times)")
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    out = open(args.json, "a") if args.json else None
    failed = False
    for name in args.only.split(","):
        for batch in map(int, args.batch.split(",")):
            for dtype in args.dtype.split(","):
                try:
                    time_model(args, name, batch, dtype, out)
                except Exception as e:  # report every model, not only the first failure
                    failed = True
                    print("%-14s b%-3d %-8s FAILED: %s: %s" % (name, batch, dtype, type(e).__name__,
                                                              str(e).splitlines()[0][:200]), flush=True)
                torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
