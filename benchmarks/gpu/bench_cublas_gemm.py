"""GEMMs of BERT-base (batch 1 and 32, sequence 128, hidden 768), of the zoo's classifiers and
transformers, and large float16 GEMMs: Partita's cuBLAS partitions (partition_for_cublas, run by a
VM on cuda:0; the C++ half is CublasBench.Gemms in test_backend_cublas) against torch.matmul /
F.linear (+ bias and activation) in the same run. CUDA events around each call, median of 50
after 10 warm-up calls; Partita once with the heuristic's first algorithm and once with the
Target option autotune_top_k=8. Prints a Markdown table (speed = torch time / Partita time) and writes
it with the raw numbers as JSON.

    python3 bench_cublas_gemm.py --partita ./test_backend_cublas [--out results.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PEAK_FP16_TFLOPS = 722.0  # dense float16, measured on this H200 (docs/gpu.md)


def shapes():
    """(name, batch, m, k, n, kind); linear weights are (n, k) as in torch.nn.Linear."""
    out = []
    for b in (1, 32):
        t = 128 * b  # BERT-base: tokens of the batch
        out += [
            ("bert_qkv_b%d" % b, 0, t, 768, 768, "linear_bias"),
            ("bert_attn_out_b%d" % b, 0, t, 768, 768, "linear_bias"),
            ("bert_ffn1_gelu_b%d" % b, 0, t, 768, 3072, "linear_bias_gelu"),
            ("bert_ffn2_b%d" % b, 0, t, 3072, 768, "linear_bias"),
            ("bert_scores_b%d" % b, 12 * b, 128, 64, 128, "bmm"),
            ("bert_context_b%d" % b, 12 * b, 128, 128, 64, "bmm"),
            ("resnet18_fc_b%d" % b, 0, b, 512, 1000, "linear_bias"),
            ("resnet50_fc_b%d" % b, 0, b, 2048, 1000, "linear_bias"),
            ("mobilenet_v2_fc_b%d" % b, 0, b, 1280, 1000, "linear_bias"),
            ("densenet121_fc_b%d" % b, 0, b, 1024, 1000, "linear_bias"),
            ("vit_b16_qkv_b%d" % b, 0, 197 * b, 768, 2304, "linear_bias"),
            ("vit_b16_mlp1_gelu_b%d" % b, 0, 197 * b, 768, 3072, "linear_bias_gelu"),
            ("vit_b16_mlp2_b%d" % b, 0, 197 * b, 3072, 768, "linear_bias"),
            ("convnext_t_pw1_gelu_b%d" % b, 0, 3136 * b, 96, 384, "linear_bias_gelu"),
        ]
    return out


LARGE = [("large_4096", 0, 4096, 4096, 4096, "linear"), ("large_8192", 0, 8192, 8192, 8192, "linear"),
         ("large_16384x8192", 0, 16384, 8192, 8192, "linear")]


def flops(batch, m, k, n):
    return 2.0 * max(batch, 1) * m * k * n


def torch_median_us(dtype, batch, m, k, n, kind):
    import torch
    import torch.nn.functional as F
    dt = {"float32": torch.float32, "float16": torch.float16}[dtype]
    dev = "cuda"
    if kind == "bmm":
        x = torch.randn(batch, m, k, device=dev, dtype=dt)
        y = torch.randn(batch, k, n, device=dev, dtype=dt)
        fn = lambda: torch.matmul(x, y)  # noqa: E731
    else:
        x = torch.randn(m, k, device=dev, dtype=dt)
        w = torch.randn(n, k, device=dev, dtype=dt)
        b = torch.randn(n, device=dev, dtype=dt)
        if kind == "linear":
            fn = lambda: torch.matmul(x, w.t())  # noqa: E731
        elif kind == "linear_bias":
            fn = lambda: F.linear(x, w, b)  # noqa: E731
        elif kind == "linear_bias_relu":
            fn = lambda: torch.relu(F.linear(x, w, b))  # noqa: E731
        else:  # cuBLASLt's GELU epilogue is the tanh form
            fn = lambda: F.gelu(F.linear(x, w, b), approximate="tanh")  # noqa: E731
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(50)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(50)]
    for s, e in zip(starts, stops):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, stops)) * 1000.0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--partita", required=True, help="the test_backend_cublas program")
    ap.add_argument("--out", default="bench_cublas_gemm.json")
    args = ap.parse_args(argv)
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False  # Partita's default: float32 is float32
    cases = [(dt,) + s for dt in ("float32", "float16") for s in shapes()] + [("float16",) + s for s in LARGE]
    with tempfile.TemporaryDirectory() as tmp:
        shape_file = os.path.join(tmp, "shapes.txt")
        out_file = os.path.join(tmp, "partita.jsonl")
        with open(shape_file, "w") as f:
            for dt, name, batch, m, k, n, kind in cases:
                f.write("%s %s %d %d %d %d %s\n" % (name, dt, batch, m, k, n, kind))
        partita, tuned = {}, {}
        for top_k, into in ((0, partita), (8, tuned)):
            env = dict(os.environ, PARTITA_CUBLAS_BENCH_SHAPES=shape_file, PARTITA_CUBLAS_BENCH_OUT=out_file,
                       PARTITA_CUBLAS_BENCH_TOP_K=str(top_k))
            subprocess.run([args.partita, "--gtest_filter=CublasBench.Gemms"], env=env, check=True,
                           stdout=sys.stderr)
            with open(out_file) as f:
                for line in f:
                    r = json.loads(line)
                    into[(r["name"], r["dtype"])] = r["median_us"]
    rows = []
    for dt, name, batch, m, k, n, kind in cases:
        t = torch_median_us(dt, batch, m, k, n, kind)
        p = partita[(name, dt)]
        q = tuned[(name, dt)]
        rows.append({"name": name, "dtype": dt, "batch": batch, "m": m, "k": k, "n": n, "kind": kind,
                     "torch_us": t, "partita_us": p, "speed": t / p, "tuned_us": q, "tuned_speed": t / q,
                     "partita_tflops": flops(batch, m, k, n) / p / 1e6,
                     "torch_tflops": flops(batch, m, k, n) / t / 1e6})
    print("| GEMM | dtype | shape (batch) m x k x n | torch µs | Partita µs | speed vs torch | autotuned µs |"
          " speed | Partita TFLOP/s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        shape = ("%d x " % r["batch"] if r["batch"] else "") + "%d x %d x %d" % (r["m"], r["k"], r["n"])
        tf = "%.1f" % r["partita_tflops"]
        if r["name"].startswith("large"):
            tf += " (%.0f%% of %d)" % (100 * r["partita_tflops"] / PEAK_FP16_TFLOPS, PEAK_FP16_TFLOPS)
        print("| %s | %s | %s | %.1f | %.1f | %.2f | %.1f | %.2f | %s |" % (
            r["name"], r["dtype"], shape, r["torch_us"], r["partita_us"], r["speed"], r["tuned_us"],
            r["tuned_speed"], tf))
    for key in ("speed", "tuned_speed"):
        worst = min(rows, key=lambda r: r[key])
        print("\nslowest relative to torch (%s): %s %s at %.2f" % (key, worst["name"], worst["dtype"], worst[key]))
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
