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

    python benchmarks/speed/attention.py --decoding [--threads N]

times a beam-search step's attention instead, forward only, without gradients, on bfloat16
inputs as a packed bf16 decoder hands them over: self-attention over the cached positions
(one query a row) and cross-attention of a sentence's 5 beams over its source, in float32
(fused or explicit) and in bfloat16 (fused or explicit). Results go to
benchmarks/speed/attention_decoding.md, with the machine.
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
# (queries' shape, keys' shape, padding mask): a step of 60 sentences × 5 beams
DECODING_SHAPES = {
    "self-attention, 300 beams × 4 heads, 1 query, 15 cached positions": (
        (300, 4, 1, 64),
        (300, 4, 15, 64),
        False,
    ),
    "the same at 40 cached positions": ((300, 4, 1, 64), (300, 4, 40, 64), False),
    "cross-attention, 60 sentences × 4 heads, 5 beams' queries, 20 source tokens": (
        (60, 4, 5, 64),
        (60, 4, 20, 64),
        True,
    ),
}


def explicit_fp32(q, k, v, mask):
    with torch.autocast("cpu", enabled=False):
        return scaled_dot_product_attention(q.float(), k.float(), v.float(), mask)[0].to(q.dtype)


DECODING_CASES = {
    "fused SDPA in float32": sdpa_fp32,
    "explicit in float32": explicit_fp32,
    "fused SDPA in bfloat16": sdpa_bf16,
    "explicit, bfloat16 matmuls": explicit,
}


def decoding(args) -> str:
    from plot import machine

    from transduce.device import retain_freed_memory

    retain_freed_memory()  # as a translator on a CPU does: float32 copies come and go
    lines = [
        f"Command: `python benchmarks/speed/attention.py --decoding --threads {args.threads}` "
        f"on {machine('cpu')} (forward only, no gradient, bfloat16 inputs; median of "
        f"{args.rounds} interleaved rounds of 20 calls)",
        "",
    ]
    for label, (q_shape, k_shape, masked) in DECODING_SHAPES.items():
        q = torch.randn(*q_shape, dtype=torch.bfloat16)
        k, v = (torch.randn(*k_shape, dtype=torch.bfloat16) for _ in range(2))
        mask = None
        if masked:
            mask = make_mask("padding", (k_shape[0], 1, k_shape[2], 1))
        times = {name: [] for name in DECODING_CASES}
        with torch.no_grad():
            for _ in range(args.rounds + 1):
                for name, fn in DECODING_CASES.items():
                    start = time.perf_counter()
                    for _ in range(20):
                        fn(q, k, v, mask)
                    times[name].append((time.perf_counter() - start) / 20)
        base = statistics.median(times["fused SDPA in float32"][1:])
        lines += [f"### {label}", "", "| path | µs | float32 SDPA's time ÷ this |"]
        lines.append("|---|---:|---:|")
        for name, t in times.items():
            median = statistics.median(t[1:])  # the first round builds kernels
            lines.append(f"| {name} | {median * 1e6:,.0f} | {base / median:.2f}× |")
        lines.append("")
    return "\n".join(lines)


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
    parser.add_argument("--out", help="default: attention.md, or attention_decoding.md")
    parser.add_argument("--decoding", action="store_true", help="time a beam-search step's")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.decoding:
        text = decoding(args)
        Path(args.out or HERE / "attention_decoding.md").write_text(text)
        return print(text)
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
    Path(args.out or HERE / "attention.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
