#!/usr/bin/env python3
"""The PyTorch (cuBLAS) side of the CUTLASS benchmark: the same fp16 GEMMs with epilogues as
src/backend/cutlass/tests/bench_test.cc (BERT-base and ResNet-50's 1x1 convolutions at batch 32),
timed with CUDA events (median of 50 after warm-up), two ways each: the product alone
(torch.matmul: cuBLAS's GEMM, the bar for the kernel) and eager PyTorch for the whole epilogue
(addmm with the bias, then the activation and the residual as separate kernels). Then it joins
the CUTLASS table (--cutlass, written by the C++ side) into one table.

    python3 benchmarks/gpu/bench_cutlass.py --torch-json torch.json --measure   (PyTorch's side)
    python3 benchmarks/gpu/bench_cutlass.py --cutlass cutlass.tsv --torch-json torch.json [--out table.md]

(The GPU run measures PyTorch while its CPUs compile the CUTLASS units: the GPU is idle then.)
"""
import argparse
import csv
import json

SHAPES = [  # name, M, N, K, activation, residual (as bench_test.cc)
    ("bert_qkv", 4096, 2304, 768, None, False),
    ("bert_attn_out+res", 4096, 768, 768, None, True),
    ("bert_ffn1+gelu", 4096, 3072, 768, "gelu", False),
    ("bert_ffn2+res", 4096, 768, 3072, None, True),
    ("resnet_1x1_64to256+relu", 100352, 256, 64, "relu", False),
    ("resnet_1x1_128to512+res+relu", 25088, 512, 128, None, True),
]


def median_ms(fn, runs=50, warmup=10):
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def torch_times():
    import torch
    torch.manual_seed(0)
    out = {}
    for name, m, n, k, act, res in SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=torch.float16)
        w = torch.randn(k, n, device="cuda", dtype=torch.float16) / k ** 0.5
        b = torch.randn(n, device="cuda", dtype=torch.float16)
        r = torch.randn(m, n, device="cuda", dtype=torch.float16)
        post_relu = res and "relu" in name

        def eager():
            y = torch.addmm(b, x, w)
            if act == "gelu":
                y = torch.nn.functional.gelu(y)
            elif act == "relu":
                y = torch.relu(y)
            if res:
                y = y + r
                if post_relu:
                    y = torch.relu(y)
            return y

        out[name] = (median_ms(lambda: torch.matmul(x, w)), median_ms(eager))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cutlass", help="the C++ side's table (tab-separated)")
    ap.add_argument("--torch-json", required=True, help="PyTorch's times: written with --measure, else read")
    ap.add_argument("--measure", action="store_true", help="measure PyTorch and write --torch-json")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.measure:
        with open(args.torch_json, "w") as f:
            json.dump(torch_times(), f)
        return
    with open(args.torch_json) as f:
        t = json.load(f)
    with open(args.cutlass) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    lines = ["| GEMM (fp16, M x N x K) | cuBLAS matmul alone | PyTorch eager, whole epilogue | CUTLASS kernel (best) "
             "| best / cuBLAS matmul | Partita module | eager / module | kernel config |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        mm, eager = t[r["shape"]]
        best, mod = float(r["best_ms"]), float(r["module_ms"])
        tflop = float(r["TFLOP"])
        lines.append(f"| {r['shape']} ({r['M']}x{r['N']}x{r['K']}) | {mm:.3f} ms ({tflop / mm * 1e3:.0f} TFLOP/s) "
                     f"| {eager:.3f} ms | {best:.3f} ms ({tflop / best * 1e3:.0f} TFLOP/s) | {mm / best:.2f} "
                     f"| {mod:.3f} ms | {eager / mod:.2f} | {r['best_config']} |")
    text = "\n".join(lines)
    print(text)
    print("\ncached rebuilds (s):", ", ".join(f"{r['shape']}={float(r['cached_rebuild_s']):.3f}" for r in rows))
    print("first builds with profiling (s):", ", ".join(f"{r['shape']}={float(r['build_s']):.1f}" for r in rows))
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
