"""`transduce attention RUN "sentence" --output FILE.png|FILE.html`."""

from __future__ import annotations

import argparse
import os

import numpy as np

from transduce.api.loading import load
from transduce.decoding.translator import MAX_BEAM
from transduce.errors import UserError
from transduce.io import check_output_file
from transduce.viz.attention_html import save_attention_html
from transduce.viz.heatmaps import plot_attention


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "attention",
        help=summary,
        description="Translate SENTENCE and draw its attention weights: a PNG grid of heatmaps "
        "(every layer × head, or their mean), or a self-contained interactive HTML "
        "page (choose kind, layer and head; hover a cell for its weight).",
    )
    parser.add_argument(
        "model",
        metavar="RUN_DIR|CHECKPOINT",
        help="a translation run directory (its averaged, else best, else newest "
        "checkpoint) or a checkpoint file",
    )
    parser.add_argument("sentence", help="the sentence to translate")
    parser.add_argument(
        "--output",
        "--out",
        dest="out",
        required=True,
        help="FILE.png or FILE.html (--out: the same)",
    )
    parser.add_argument(
        "--kind",
        default="cross",
        choices=["cross", "encoder", "decoder"],
        help="cross-attention (default), encoder or decoder self-attention "
        "(PNG; the HTML page has all three)",
    )
    parser.add_argument("--mean", action="store_true", help="PNG: the mean of the heads")
    parser.add_argument(
        "--beam", type=int, help="beam size (default: the run's decoding.json, else 5)"
    )
    parser.add_argument("--device", default="auto", help="auto, cpu, mps, cuda or cuda:N")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    suffix = os.path.splitext(args.out)[1].lower()
    if suffix not in (".png", ".html"):
        raise UserError(f"--output {args.out}: give a .png or .html file")
    check_output_file(args.out, "--output")

    if args.beam is not None and not 1 <= args.beam <= MAX_BEAM:
        raise UserError(f"--beam must be 1 to {MAX_BEAM}, not {args.beam}")
    model = load(args.model, args.device)
    if not hasattr(model, "attention"):
        raise UserError(f"{args.model}: holds no translation model with attention to show")
    maps = model.attention(args.sentence, args.beam or model.decoding.beam)
    title = f"{args.sentence} → {maps.translation}"
    if suffix == ".html":
        save_attention_html(maps, args.out, title)
    else:
        weights = np.stack(maps.weights(args.kind))  # (layers, H, Q, K)
        heads = None
        if args.mean:
            weights, heads = weights.mean(axis=1, keepdims=True), ["mean of heads"]
        rows, cols = maps.labels(args.kind)
        names = {
            "cross": ("source", "output"),
            "encoder": ("source (key)", "source (query)"),
            "decoder": ("output so far (key)", "output so far (query)"),
        }[args.kind]
        plot_attention(
            weights, cols, rows, args.out, f"{args.kind} attention: {title}", names, heads
        )
    print(maps.translation)
    print(f"wrote {args.out}")
    return 0
