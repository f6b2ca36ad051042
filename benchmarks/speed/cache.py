"""The decoder's self-attention cache in beam search: copied whole every step (torch.cat to
extend, index_select to reorder) against transduce.nn.cache's preallocated slabs (a step
writes its position in place; a reorder copies the cached positions once).

    python benchmarks/speed/cache.py [--threads N]

One decoder layer's keys and values of the d_model 256 model (4 heads of 64) for 80
sentences × beam 5 = 400 rows, stepped 40 times: each step appends one position, attends
with one query per row (PyTorch's fused attention) and reorders the rows as beam search
does. Interleaved rounds, medians. Results go to benchmarks/speed/cache.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from transduce.nn.cache import LayerCache

HERE = Path(__file__).parent
ROWS, HEADS, HEAD_SIZE, STEPS = 400, 4, 64, 40


def copied(new_kv, orders, queries) -> None:
    """Before: cat the new position onto the cache, then index_select the surviving rows."""
    keys = values = None
    for kv, rows, q in zip(new_kv, orders, queries):
        keys = kv if keys is None else torch.cat([keys, kv], 2)
        values = kv if values is None else torch.cat([values, kv], 2)
        F.scaled_dot_product_attention(q, keys, values)
        keys, values = keys.index_select(0, rows), values.index_select(0, rows)


def slabs(new_kv, orders, queries) -> None:
    """Now: LayerCache.extend and LayerCache.reorder."""
    empty = torch.empty(0)
    cache = LayerCache(empty, empty)
    for kv, rows, q in zip(new_kv, orders, queries):
        cache = cache.extend(kv, kv)
        F.scaled_dot_product_attention(q, cache.self_keys, cache.self_values)
        cache = cache.reorder(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path, default=HERE / "cache.md")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    new_kv = [torch.randn(ROWS, HEADS, 1, HEAD_SIZE) for _ in range(STEPS)]
    queries = [torch.randn(ROWS, HEADS, 1, HEAD_SIZE) for _ in range(STEPS)]
    beams = torch.arange(ROWS).view(-1, 5)
    orders = [  # each sentence keeps beams of its own, some twice
        beams.gather(1, torch.randint(0, 5, beams.shape)).view(-1) for _ in range(STEPS)
    ]
    times = {"copied whole (cat + index_select)": [], "preallocated slabs": []}
    with torch.no_grad():
        for _ in range(args.rounds):
            for name, run in zip(times, (copied, slabs)):
                start = time.perf_counter()
                run(new_kv, orders, queries)
                times[name].append((time.perf_counter() - start) * 1000 / STEPS)
    base = statistics.median(times["copied whole (cat + index_select)"])
    lines = [
        f"Command: `python benchmarks/speed/cache.py --threads {args.threads}`: one layer, "
        f"{ROWS} rows, {STEPS} steps (extend, attend, reorder); ms a step, median of "
        f"{args.rounds} interleaved rounds.",
        "",
        "| self-attention cache | ms a step | speed-up |",
        "|---|---:|---:|",
    ]
    for name, values in times.items():
        ms = statistics.median(values)
        lines.append(f"| {name} | {ms:.2f} | {base / ms:.2f}× |")
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
