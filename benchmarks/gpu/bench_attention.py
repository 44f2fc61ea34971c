#!/usr/bin/env python3
"""PyTorch's side of the attention benchmark (CutlassBench.AttentionBertShapes is Partita's):
torch.nn.functional.scaled_dot_product_attention at BERT-base's shapes (sequence 128, 12 heads
of 64, float16) at batch 32 and 1, (B, H, S, D) contiguous operands (PyTorch's own layout, its
best case), timed as bench_cutlass.py times PyTorch: a CUDA graph of 20 calls, median of 5
replays, per call.

    python3 benchmarks/gpu/bench_attention.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cutlass import graph_ms  # noqa: E402


def main():
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    print(f"[torch] {torch.__version__} on {torch.cuda.get_device_name()}")
    for batch in (32, 1):
        q, k, v = (torch.randn(batch, 12, 128, 64, device="cuda", dtype=torch.float16) for _ in range(3))
        print(f"[torch] batch {batch}: sdpa {graph_ms(lambda: F.scaled_dot_product_attention(q, k, v)) * 1e3:.2f} us per call")


if __name__ == "__main__":
    main()
