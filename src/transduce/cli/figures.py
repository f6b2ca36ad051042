"""`transduce figures --output DIR`: every figure of the study notes, from the library."""

from __future__ import annotations

import argparse
import time

from transduce.io import check_writable
from transduce.logs import progress
from transduce.tasks.figures import FILES, make_figures


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "figures",
        help=summary,
        description="Nadaraya–Watson pooling (fixed and learned kernel), masked softmax, "
        "additive vs scaled dot-product weights, positional encodings, multi-head "
        "weights, Bahdanau attention of the RNN baseline, and self- and "
        "cross-attention of a small Transformer trained here to reverse sequences "
        "(about a minute on a laptop CPU).",
    )
    parser.add_argument(
        "--output",
        "--out",
        dest="out",
        default="figures",
        help="folder for the PNGs (default figures; --out: the same)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_writable(args.out, "--output")
    start = time.perf_counter()
    with progress(len(FILES), "figures", "figure") as bar:
        make_figures(args.out, bar)
    print(
        f"wrote {len(FILES)} figures to {args.out} in {time.perf_counter() - start:.0f} s: "
        + ", ".join(sorted(FILES))
    )
    return 0
