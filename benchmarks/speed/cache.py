"""The decoder's self-attention cache in beam search: copied whole every step (torch.cat to
extend, index_select to reorder: transduce before 9bbcc52) against transduce.nn.cache's
preallocated slabs (a step writes its position in place; a reorder copies the cached
positions once), translating test_2016_flickr with a trained run.

    python benchmarks/speed/cache.py --data data/multi30k --run-dir runs/bench/en-de-2h

One process; the two caches take turns (the old one patched in for its turns), each round
translating the same sentences with beam 5 at the given precision. Medians of the rounds.
Results go to benchmarks/speed/cache.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import torch

from transduce.nn.cache import LayerCache, _select

HERE = Path(__file__).parent


def copied_extend(self, keys, values):
    if self.self_keys is not None:
        keys = torch.cat([self.self_keys, keys], dim=2)
        values = torch.cat([self.self_values, values], dim=2)
    return replace(self, self_keys=keys, self_values=values)


def copied_reorder(self, indices, memory_rows=None):
    return LayerCache(
        _select(self.cross_keys, memory_rows),
        _select(self.cross_values, memory_rows),
        _select(self.self_keys, indices),
        _select(self.self_values, indices),
    )


@contextmanager
def copied_whole():
    """LayerCache as it was: every step copies the cached positions twice."""
    saved = LayerCache.extend, LayerCache.reorder
    LayerCache.extend, LayerCache.reorder = copied_extend, copied_reorder
    try:
        yield
    finally:
        LayerCache.extend, LayerCache.reorder = saved


def main() -> None:
    from transduce.api.loading import load
    from transduce.data.text import read_lines

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="the multi30k folder")
    parser.add_argument("--run-dir", required=True, help="a trained Multi30k En→De run")
    parser.add_argument("--precision", default="int8", choices=["fp32", "bf16", "int8"])
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "cache.md")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sources = read_lines(Path(args.data) / "test_2016_flickr.en")[: args.sentences]
    translator = load(args.run_dir, "cpu", args.precision, verbose=False)
    translator.search(sources[:20], 5, 0.6)  # warm-up
    arms = {"copied whole (cat + index_select)": copied_whole, "preallocated slabs": None}
    rates: dict[str, list[float]] = {name: [] for name in arms}
    outputs = {}
    for _ in range(args.rounds):
        for name, patch in arms.items():
            with patch() if patch else _nothing():
                start = time.perf_counter()
                outputs[name] = translator.search(sources, 5, 0.6)
                rates[name].append(len(sources) / (time.perf_counter() - start))
    same = outputs[next(iter(arms))] == outputs["preallocated slabs"]
    base = statistics.median(rates["copied whole (cat + index_select)"])
    lines = [
        f"Command: `python benchmarks/speed/cache.py --precision {args.precision} "
        f"--threads {args.threads}`: {len(sources)} sentences of test_2016_flickr, beam 5, "
        f"median of {args.rounds} alternating rounds in one process.",
        "",
        "| self-attention cache | sentences/s | speed-up |",
        "|---|---:|---:|",
    ]
    for name, values in rates.items():
        rate = statistics.median(values)
        lines.append(f"| {name} | {rate:.1f} | {rate / base:.2f}× |")
    lines += ["", f"Same translations and scores from both: {'yes' if same else 'NO'}."]
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)


@contextmanager
def _nothing():
    yield


if __name__ == "__main__":
    main()
