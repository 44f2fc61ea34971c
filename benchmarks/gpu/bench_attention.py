#!/usr/bin/env python3
"""PyTorch's side of the attention benchmark (CutlassBench.AttentionBertShapes is Partita's):
torch.nn.functional.scaled_dot_product_attention at BERT-base's shapes (sequence 128, 12 heads
of 64, float16) at batch 32 and 1, (B, H, S, D) contiguous operands (PyTorch's own layout, its
best case), ten calls captured in a CUDA graph, median of 5 replays after warm-up, per call.

    python3 benchmarks/gpu/bench_attention.py
"""
import statistics

import torch
import torch.nn.functional as F


def per_call_us(fn, calls=10, rounds=5):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    for _ in range(5):
        g.replay()
    times = []
    for _ in range(rounds):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / calls)
    return statistics.median(times), min(times), max(times)


def main():
    torch.manual_seed(0)
    print(f"[torch] {torch.__version__} on {torch.cuda.get_device_name()}")
    for batch in (32, 1):
        q, k, v = (torch.randn(batch, 12, 128, 64, device="cuda", dtype=torch.float16) for _ in range(3))
        med, lo, hi = per_call_us(lambda: F.scaled_dot_product_attention(q, k, v))
        print(f"[torch] batch {batch}: sdpa {med:.2f} us per call [{lo:.2f}, {hi:.2f}]")


if __name__ == "__main__":
    main()
