"""The candidates for transduce's fast linear layers (int8, and bfloat16 or float32 packed
once), timed at the shapes beam search runs.

    python benchmarks/speed/int8.py [--threads N]

Each candidate computes y = x Wᵀ + b for float32 x and returns float32, as a layer of the
model would:

  float32            F.linear
  bfloat16           F.linear on bfloat16 x and W (what bf16 autocast runs)
  bfloat16 packed    W in bfloat16, laid out once in oneDNN's blocked format
                     (transduce.nn.packed, what bf16 translation runs on a CPU)
  float32 packed     W in float32, laid out once for oneDNN (transduce.nn.packed, what
                     fp32 translation runs on a CPU)
  fbgemm dynamic     torch.ops.quantized.linear_dynamic: W int8 per output channel, x
                     quantized per call (PyTorch's eager dynamic quantization)
  oneDNN dynamic     torch.ops.onednn.qlinear_pointwise: W int8 per output channel, x
                     quantized per call to int8 with a scale per row, max|x_i| / 127
                     (63 where the kernel's byte pairs saturate: AVX2 without VNNI),
                     shifted into uint8, the scale applied after the kernel (the x86
                     int8 kernel of PyTorch's compiler): transduce.nn.int8.Int8Linear,
                     quantization included
  weight-only int8   torch.ops.aten._weight_int8pack_mm: W int8, x in bfloat16

Shapes: the d_model 256 model's projections (256 → 256, 256 → 1024, 1024 → 256) and its
output layer (256 → 8000), at 5 rows (one sentence's beams), 80 and 400 rows (a batch's
beams) and 2,000 rows (an encoder batch). Interleaved rounds, medians; also the largest
error against float32, relative to the largest output, and whether a row's output is the
same bit for bit alone as in its batch. Results go to benchmarks/speed/int8.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from transduce.nn.int8 import Int8Linear, input_levels
from transduce.nn.packed import PackedLinear, packing_supported

HERE = Path(__file__).parent
LAYERS = {"256 → 256": (256, 256), "256 → 1024": (256, 1024), "1024 → 256": (1024, 256)}
LAYERS["256 → 8000"] = (256, 8000)
ROWS = (5, 80, 400, 2000)


def candidates(w, b):
    """name → function of x (rows, K) giving (rows, N) float32."""
    N = w.shape[0]
    scale = w.abs().amax(1).clamp_min(1e-12) / 127
    wq = (w / scale[:, None]).round().to(torch.int8)
    wb, bb = w.bfloat16(), b.bfloat16()
    with warnings.catch_warnings():  # quantized tensors are deprecated; the ops are not yet
        warnings.simplefilter("ignore")
        qw = torch.quantize_per_channel(
            w, scale.double(), torch.zeros(N, dtype=torch.long), 0, torch.qint8
        )
    fbgemm = torch.ops.quantized.linear_prepack(qw, b)
    linear = nn.Linear(w.shape[1], N)
    linear.weight.data, linear.bias.data = w, b
    onednn_dynamic = Int8Linear(linear)  # the layer precision=int8 runs

    found = {
        "float32": lambda x: F.linear(x, w, b),
        "bfloat16": lambda x: F.linear(x.bfloat16(), wb, bb).float(),
        "fbgemm dynamic": lambda x: torch.ops.quantized.linear_dynamic(x, fbgemm, False),
        "oneDNN dynamic": onednn_dynamic,
        "weight-only int8": lambda x: (
            torch.ops.aten._weight_int8pack_mm(x.bfloat16(), wq, scale.bfloat16()) + bb
        ).float(),
    }
    if packing_supported():
        packed = PackedLinear(linear)

        def bf16_packed(x):
            with torch.autocast("cpu", torch.bfloat16):  # it packs for autocast
                return packed(x).float()

        found["bfloat16 packed"] = bf16_packed
    if packing_supported(torch.float32):
        found["float32 packed"] = PackedLinear(linear, torch.float32)
    return found


def timed(fn, x, repeats: int) -> float:
    start = time.perf_counter()
    for _ in range(repeats):
        fn(x)
    return (time.perf_counter() - start) / repeats * 1e6


def measure(rounds: int) -> list[dict]:
    rows_out = []
    torch.manual_seed(0)
    for layer, (K, N) in LAYERS.items():
        w, b = torch.randn(N, K) * K**-0.5, torch.randn(N) * 0.1
        for rows in ROWS:
            x = torch.randn(rows, K)
            fns = candidates(w, b)
            ref = fns["float32"](x)
            errors = {
                n: ((f(x) - ref).abs().max() / ref.abs().max()).item() for n, f in fns.items()
            }
            alone = {
                n: all(torch.equal(f(x[i : i + 1]), f(x)[i : i + 1]) for i in (0, rows - 1))
                for n, f in fns.items()
            }
            repeats = max(2, int(2e5 / (rows * N)))
            times = {n: [] for n in fns}
            for _ in range(rounds):
                for name, fn in fns.items():
                    times[name].append(timed(fn, x, repeats))
            for name in fns:
                rows_out.append(
                    {
                        "layer": layer,
                        "rows": rows,
                        "candidate": name,
                        "us": statistics.median(times[name]),
                        "error": errors[name],
                        "batch_invariant": alone[name],
                    }
                )
    return rows_out


def report(results: list[dict], threads: int) -> str:
    from plot import machine

    names = list(dict.fromkeys(r["candidate"] for r in results))
    lines = [
        f"Command: `python benchmarks/speed/int8.py --threads {threads}` on {machine('cpu')}, "
        f"{torch.backends.cpu.get_cpu_capability()} kernels, int8 inputs ±{input_levels()}; "
        "µs per call (median of interleaved rounds), and in brackets float32's time ÷ this.",
        "",
        "| layer | rows | " + " | ".join(names) + " |",
        "|---|---:|" + "---:|" * len(names),
    ]
    keys = list(dict.fromkeys((r["layer"], r["rows"]) for r in results))
    for layer, rows in keys:
        cells = {r["candidate"]: r for r in results if (r["layer"], r["rows"]) == (layer, rows)}
        base = cells["float32"]["us"]
        lines.append(
            f"| {layer} | {rows} | "
            + " | ".join(f"{cells[n]['us']:,.0f} ({base / cells[n]['us']:.2f}×)" for n in names)
            + " |"
        )
    worst = {n: max(r["error"] for r in results if r["candidate"] == n) for n in names}
    steady = {n: all(r["batch_invariant"] for r in results if r["candidate"] == n) for n in names}
    lines += [
        "",
        "Largest error against float32, relative to the largest output: "
        + ", ".join(f"{n} {e:.1e}" for n, e in worst.items())
        + ".",
        "",
        "A row's output the same bit for bit alone as in its batch (first and last row, every "
        "shape): " + ", ".join(f"{n} {'yes' if steady[n] else 'no'}" for n in names) + ".",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path, default=HERE / "int8.md")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    text = report(measure(args.rounds), args.threads)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
