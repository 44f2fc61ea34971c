"""The cudnn backend against PyTorch, in one run on the GPU machine.

Partita's side is timed by the C++ test `CudnnPerf.Resnet50ConvsAndBertAttention`
(src/backend/cudnn/tests/cudnn_gpu_perf_test.cc: PARTITA_CUDNN_BENCH=partita.json
./test_backend_cudnn --gtest_filter=CudnnPerf.*), which writes one record per shape; this script
times PyTorch on the same shapes (CUDA events, median of 50 after 5 warm-up calls) and prints
the comparison:

  - resnet50's convolutions + bias + relu: torch.nn.functional.conv2d then relu, in NCHW and in
    channels_last (the faster of the two is the baseline), cudnn.benchmark on, TF32 off (Partita's
    float32 convolutions are exact float32 by default);
  - BERT-base attention (12 heads of 64, sequence 128): scaled_dot_product_attention on
    (B, S, N, H) tensors viewed as (B, N, S, H), with the (B, 1, 1, S) additive padding mask or
    without.

    python3 benchmarks/gpu/bench_cudnn.py partita.json [out.json]
"""
import json
import statistics
import sys

import torch
import torch.nn.functional as F

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def median_ms(fn):
    for _ in range(5):
        fn()
    times = []
    for _ in range(50):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def torch_conv(r):
    dt = DTYPES[r["dtype"]]
    n, c, hw, k, kr = r["batch"], r["c"], r["hw"], r["k"], r["r"]
    out = {}
    for layout in ("nchw", "channels_last"):
        x = torch.rand(n, c, hw, hw, device="cuda", dtype=dt) - 0.5
        w = torch.rand(k, c, kr, kr, device="cuda", dtype=dt) - 0.5
        b = torch.rand(k, device="cuda", dtype=dt) - 0.5
        if layout == "channels_last":
            x, w = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
        out[layout] = median_ms(lambda: F.relu(F.conv2d(x, w, b, stride=r["stride"], padding=r["pad"]), inplace=True))
    return out


def torch_attention(r):
    dt = DTYPES[r["dtype"]]
    n, s, h, d = r["batch"], r["seq"], r["heads"], r["head_dim"]
    q, k, v = (torch.rand(n, s, h, d, device="cuda", dtype=dt).transpose(1, 2) for _ in range(3))
    mask = (torch.rand(n, 1, 1, s, device="cuda", dtype=dt) - 0.5) if r["mask"] else None
    return {"sdpa": median_ms(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.125))}


def main():
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    records = json.load(open(sys.argv[1]))
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    print("| kind | shape | batch | dtype | Partita cudnn (ms) | torch (ms) | torch / Partita |")
    print("|---|---|---|---|---|---|---|")
    for r in records:
        t = torch_conv(r) if r["kind"] == "conv" else torch_attention(r)
        r["torch"] = t
        best = min(t.values())
        shape = (f'{r["name"]} {r["c"]}x{r["hw"]}x{r["hw"]} -> {r["k"]} {r["r"]}x{r["r"]}/{r["stride"]}'
                 if r["kind"] == "conv" else f'{r["name"]} S={r["seq"]} N={r["heads"]} H={r["head_dim"]}')
        print(f'| {r["kind"]} | {shape} | {r["batch"]} | {r["dtype"]} | {r["ms"]:.4f} | {best:.4f} | '
              f'{best / r["ms"]:.2f} |')
    groups = {}
    for r in records:
        groups.setdefault((r["kind"], r["batch"], r["dtype"]), []).append(min(r["torch"].values()) / r["ms"])
    print("\ngeometric mean of torch / Partita (> 1: Partita faster):")
    for key, ratios in sorted(groups.items()):
        print(f"  {key[0]:9s} batch {key[1]:2d} {key[2]:8s} {statistics.geometric_mean(ratios):.2f} "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f}, {len(ratios)} shapes)")
    if len(sys.argv) > 2:
        json.dump(records, open(sys.argv[2], "w"), indent=1)


if __name__ == "__main__":
    main()
