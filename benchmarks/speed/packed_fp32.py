"""float32 translation on oneDNN's packed layers against MKL's sgemm, side by side in one
process, rounds interleaved (a shared VM's speed drifts by a fifth from minute to minute).

    python benchmarks/speed/packed_fp32.py --data data/multi30k --run-dir runs/bench/en-de-2h

Two translators of the same run in float32: ``packed``, as ``transduce.load`` gives it on
an AMD CPU (every linear layer on its weight packed once for oneDNN,
:mod:`transduce.nn.packed`), and ``mkl``, the same with its layers unpacked
(``unpack_linears``: ``F.linear``, MKL's sgemm, as before). Each round times both, in
turns (the first alternates), on a batch of test_2016_flickr sentences (beam 5, 6,000
source tokens × beam a batch, as run.py) and on single sentences (the median over them);
the medians over rounds are reported, with the BLEU of each on the batch. Results go to
benchmarks/speed/packed_fp32.md (``--out`` names another file).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

HERE = Path(__file__).parent


def main() -> None:
    from plot import machine

    import transduce
    from transduce.data.text import read_lines
    from transduce.evaluation import corpus_scores
    from transduce.nn.packed import PackedLinear, unpack_linears

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder with the Multi30k raw files")
    parser.add_argument("--run-dir", required=True, help="a trained Multi30k En→De run")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--sentences", type=int, default=300, help="the batch pass's")
    parser.add_argument("--singles", type=int, default=20, help="sentences timed alone")
    parser.add_argument("--out", type=Path, default=HERE / "packed_fp32.md")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sources = read_lines(Path(args.data) / "test_2016_flickr.en")
    references = read_lines(Path(args.data) / "test_2016_flickr.de")
    batch = slice(100, 100 + args.sentences)  # apart from the warm-up's and the singles'
    packed = transduce.load(args.run_dir, "cpu", "fp32", verbose=False)
    if not any(type(m) is PackedLinear for m in packed.model.modules()):
        raise SystemExit("fp32 translation is not packed on this CPU (it packs on AMD ones)")
    mkl = transduce.load(args.run_dir, "cpu", "fp32", verbose=False)
    unpack_linears(mkl.model)  # done sentences then leave a batch at once, as before
    systems = {"packed": packed, "mkl": mkl}
    style = {"lenpen_style": "power", "max_tokens": 6000}
    bleu = {}
    for name, translator in systems.items():
        translator.search(sources[:20], 5, 0.6, **style)  # warm-up
        found = translator.search(sources[batch], 5, 0.6, **style)
        bleu[name] = corpus_scores([h[0][0] for h in found], references[batch])["bleu"]
    rates, latencies = {n: [] for n in systems}, {n: [] for n in systems}
    for turn in range(args.rounds):
        order = list(systems) if turn % 2 == 0 else list(systems)[::-1]
        for name in order:
            translator = systems[name]
            start = time.perf_counter()
            translator.search(sources[batch], 5, 0.6, **style)
            rates[name].append(args.sentences / (time.perf_counter() - start))
            alone = []
            for line in sources[: args.singles]:
                start = time.perf_counter()
                translator.search([line], 5, 0.6, **style)
                alone.append(1000 * (time.perf_counter() - start))
            latencies[name].append(statistics.median(alone))
        print(turn, {n: (round(rates[n][-1], 1), round(latencies[n][-1])) for n in systems})
    rate = {n: statistics.median(v) for n, v in rates.items()}
    latency = {n: statistics.median(v) for n, v in latencies.items()}
    lines = [
        f"Command: `python benchmarks/speed/packed_fp32.py --threads {args.threads} --rounds "
        f"{args.rounds}` on {machine('cpu')}, {torch.backends.cpu.get_cpu_capability()} "
        f"kernels; {args.sentences} test_2016 sentences a batch pass and {args.singles} "
        "alone, beam 5; medians over rounds taken in turns.",
        "",
        "| float32 layers | sentences/s (batch) | vs mkl | ms a sentence alone (median) | vs mkl "
        "| BLEU (batch) | sentences/s each round |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name in systems:
        lines.append(
            f"| {name} | {rate[name]:.1f} | {rate[name] / rate['mkl']:.2f}× | "
            f"{latency[name]:.0f} | {latency['mkl'] / latency[name]:.2f}× | {bleu[name]:.2f} | "
            + ", ".join(f"{r:.1f}" for r in rates[name])
            + " |"
        )
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
