"""Time one dropout on a CPU: PyTorch's F.dropout against transduce.nn.dropout, with its C
kernel and without it (the mask's words drawn by PyTorch's generator, as without a
compiler).

    python benchmarks/speed/dropout.py [--threads N] [--shape 4096,256]

Both apply p = 0.1 to a float32 tensor the size of a 4096-token batch's activations at
d_model 256 (what each residual dropout of the Multi30k configs sees); the multiplication
that applies a mask is timed beside them. Interleaved rounds, medians; results go to
benchmarks/speed/dropout.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from transduce.nn import native
from transduce.nn.dropout import dropout

HERE = Path(__file__).parent


def cpu() -> str:
    names = [line for line in open("/proc/cpuinfo") if line.startswith("model name")][:1]
    return names[0].split(":", 1)[1].strip() if names else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--shape", default="4096,256")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--out", default=str(HERE / "dropout.md"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    x = torch.randn(*map(int, args.shape.split(",")))
    if native.library("dropout") is None:
        raise SystemExit("the dropout kernel needs a C compiler (cc, or $CC)")

    kernel = native._loaded["dropout"]

    def without_kernel():
        native._loaded["dropout"] = None
        try:
            return dropout(x, 0.1, True)
        finally:
            native._loaded["dropout"] = kernel

    cases = {
        "F.dropout": lambda: F.dropout(x, 0.1, True),
        "transduce.nn.dropout (C kernel)": lambda: dropout(x, 0.1, True),
        "transduce.nn.dropout (PyTorch's generator)": without_kernel,
        "x * x (the multiplication alone)": lambda: x * x,
    }
    times = {name: [] for name in cases}
    for _ in range(3):
        for f in cases.values():
            f()
    for _ in range(args.rounds):
        for name, f in cases.items():
            start = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times["F.dropout"])
    lines = [
        f"Command: `python benchmarks/speed/dropout.py --threads {args.threads} --shape "
        f"{args.shape}` (float32, p = 0.1, median of {args.rounds} interleaved rounds), on "
        f"{platform.machine()} with {args.threads} threads ({cpu()})",
        "",
        "| operation | ms | F.dropout's time ÷ this |",
        "|---|---:|---:|",
    ]
    for name, t in times.items():
        median = statistics.median(t)
        lines.append(f"| {name} | {median * 1e3:.2f} | {base / median:.1f}× |")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
