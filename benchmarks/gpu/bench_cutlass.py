#!/usr/bin/env python3
"""The PyTorch side of the CUTLASS benchmark, and the table that joins the three sides.

The shapes (fp16 GEMMs with epilogues: BERT-base, ViT-B/16's MLP, ResNet-50's classifier and 1x1
convolutions, batch 32 and 1) come from the file src/backend/cutlass/tests/bench_test.cc writes
(CutlassBench.ShapesFile). PyTorch is timed two ways, each as a CUDA graph of 20 calls (the
kernels alone, as the CUTLASS profiler and the cuBLASLt side time theirs), median of 5 launches:
the product alone (torch.matmul: cuBLAS's GEMM) and eager PyTorch for the whole epilogue (addmm
with the bias, then the activation and the residual as separate kernels: what the fused
residual saves). The cuBLASLt side (tests/lt_bench/lt_bench.cu) times one cublasLtMatmul with
the whole epilogue fused: the bar.

    python3 benchmarks/gpu/bench_cutlass.py --shapes shapes.tsv --torch-json torch.json --measure
    python3 benchmarks/gpu/bench_cutlass.py --shapes shapes.tsv --torch-json torch.json \\
        --cutlass cutlass.tsv --lt lt.tsv [--out table.md]
"""
import argparse
import csv
import json


def read_tsv(path):
    try:
        with open(path) as f:
            return list(csv.DictReader(f, delimiter="\t"))
    except OSError as e:
        print(f"(no table: {e})")
        return []


def graph_ms(fn, reps=20):
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    g.replay()
    times = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / reps)
    times.sort()
    return times[2]


def torch_times(shapes):
    import torch
    torch.manual_seed(0)
    out = {}
    for s in shapes:
        m, n, k = int(s["M"]), int(s["N"]), int(s["K"])
        act, res, post_relu = s["act"], s["residual"] == "1", s["post_relu"] == "1"
        x = torch.randn(m, k, device="cuda", dtype=torch.float16)
        w = torch.randn(k, n, device="cuda", dtype=torch.float16) / k ** 0.5
        b = torch.randn(n, device="cuda", dtype=torch.float16)
        r = torch.randn(m, n, device="cuda", dtype=torch.float16)

        def eager():
            y = torch.addmm(b, x, w)
            if act == "gelu":
                y = torch.nn.functional.gelu(y)
            elif act == "gelu_tanh":
                y = torch.nn.functional.gelu(y, approximate="tanh")
            elif act == "relu":
                y = torch.relu(y)
            if res:
                y = y + r
                if post_relu:
                    y = torch.relu(y)
            return y

        out[s["shape"]] = (graph_ms(lambda: torch.matmul(x, w)), graph_ms(eager))
    return out


def table(shapes, t, cutlass, lt):
    c = {r["shape"]: r for r in cutlass}
    l = {r["shape"]: r for r in lt}
    lines = ["| GEMM (fp16, M × N × K) + epilogue | cuBLASLt, epilogue fused (default / best algo) | "
             "CUTLASS kernel (chosen) | **CUTLASS / cuBLASLt best** | torch.matmul alone | eager PyTorch, "
             "whole epilogue | Partita module: CUDA Graph / plain VM | config |",
             "|---|---|---|---|---|---|---|---|"]
    for s in shapes:
        name = s["shape"]
        if name not in c:
            continue
        r = c[name]
        tflop = float(r["TFLOP"])
        best = float(r["best_ms"]) * 1e3
        lt_def = float(l[name]["lt_default_us"]) if name in l else float("nan")
        lt_best = float(l[name]["lt_best_us"]) if name in l else float("nan")
        mm, eager = (x * 1e3 for x in t.get(name, (float("nan"), float("nan"))))
        lines.append(
            f"| {name} ({s['M']} × {s['N']} × {s['K']}) | {lt_def:.1f} / {lt_best:.1f} µs | "
            f"{best:.1f} µs ({tflop / best * 1e6:.0f} TFLOP/s) | **{lt_best / best:.2f}** | {mm:.1f} µs | "
            f"{eager:.1f} µs | {float(r['module_graph_ms']) * 1e3:.1f} / {float(r['module_plain_ms']) * 1e3:.1f} µs "
            f"| {r['best_config']} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", required=True, help="the shapes (CutlassBench.ShapesFile)")
    ap.add_argument("--torch-json", required=True, help="PyTorch's times: written with --measure, else read")
    ap.add_argument("--measure", action="store_true", help="measure PyTorch and write --torch-json")
    ap.add_argument("--cutlass", help="the C++ side's table (CutlassBench.GemmsWithEpilogues)")
    ap.add_argument("--lt", help="the cuBLASLt side's table (lt_bench)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    shapes = read_tsv(args.shapes)
    if args.measure:
        with open(args.torch_json, "w") as f:
            json.dump(torch_times(shapes), f)
        return
    try:
        with open(args.torch_json) as f:
            t = json.load(f)
    except (OSError, ValueError):
        t = {}
    text = table(shapes, t, read_tsv(args.cutlass), read_tsv(args.lt) if args.lt else [])
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
