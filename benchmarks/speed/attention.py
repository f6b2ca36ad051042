"""Time attention forward + backward on a CPU under bf16 autocast: PyTorch's fused SDPA (in
float32, as the library runs it, and in bfloat16) against the explicit softmax(QKᵀ/√d)V.

    python benchmarks/speed/attention.py [--threads N]

Shapes: the forecasting patch model's (ETTh1, 7 channels × batch 128 = 896 sequences, 4
heads of size 4, 42 patches); a Multi30k batch's (4096 tokens as 256 sentences of 16, 4 heads
of size 64), without a mask, with a key padding mask and with the decoder's causal mask; and
the forecasting encoder–decoder's encoder (batch 64, 4 heads of size 16, 336 steps).
Interleaved rounds, medians; results go to
benchmarks/speed/attention.md, and ``transduce.nn.multi_head_attention`` picks its CPU path
from them.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from transduce.nn.attention import scaled_dot_product_attention

HERE = Path(__file__).parent
SHAPES = {
    "patch forecaster (896 × 4 heads, 42 × 42, head size 4)": ((896, 4, 42, 4), None),
    "Multi30k batch (256 × 4 heads, 16 × 16, head size 64)": ((256, 4, 16, 64), None),
    "the same with a key padding mask": ((256, 4, 16, 64), "padding"),
    "the same with the causal mask": ((256, 4, 16, 64), "causal"),
    "forecasting encoder–decoder's encoder (64 × 4 heads, 336 × 336, head size 16)": (
        (64, 4, 336, 16),
        None,
    ),
}


def make_mask(kind, shape):
    """Boolean mask, True keeps a key: (B, 1, 1, K) padding or (1, 1, Q, K) causal."""
    B, _, L, _ = shape
    if kind == "padding":
        lengths = torch.randint(L // 2, L + 1, (B,))
        return (torch.arange(L) < lengths[:, None]).view(B, 1, 1, L)
    if kind == "causal":
        return torch.ones(L, L, dtype=torch.bool).tril().view(1, 1, L, L)
    return None


def sdpa_fp32(q, k, v, mask):
    with torch.autocast("cpu", enabled=False):
        return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask).to(
            q.dtype
        )


def sdpa_bf16(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def explicit(q, k, v, mask):
    return scaled_dot_product_attention(q, k, v, mask)[0]


CASES = {
    "fused SDPA in float32": sdpa_fp32,
    "fused SDPA in bfloat16": sdpa_bf16,
    "explicit, bfloat16 matmuls": explicit,
}


def step(fn, q, k, v, mask) -> float:
    start = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = fn(q, k, v, mask)
    out.float().sum().backward()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", default=str(HERE / "attention.md"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    lines = [
        f"Command: `python benchmarks/speed/attention.py --threads {args.threads}` "
        f"(forward + backward of bfloat16 inputs, median of {args.rounds} interleaved "
        "rounds)",
        "",
    ]
    for label, (shape, kind) in SHAPES.items():
        mask = make_mask(kind, shape)
        q, k, v = (torch.randn(*shape, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        times = {name: [] for name in CASES}
        for fn in CASES.values():
            step(fn, q, k, v, mask)
        for _ in range(args.rounds):
            for name, fn in CASES.items():
                times[name].append(step(fn, q, k, v, mask))
        base = statistics.median(times["fused SDPA in float32"])
        lines += [
            f"### {label}",
            "",
            "| path | ms | float32 SDPA's time ÷ this |",
            "|---|---:|---:|",
        ]
        for name, t in times.items():
            median = statistics.median(t)
            lines.append(f"| {name} | {median * 1e3:.1f} | {base / median:.2f}× |")
        lines.append("")
    text = "\n".join(lines)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
