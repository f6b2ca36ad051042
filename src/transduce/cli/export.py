"""`transduce export RUN_DIR|CHECKPOINT --format ctranslate2 [--quantization int8] OUT_DIR`."""

from __future__ import annotations

import argparse

from transduce.export.ctranslate2 import export_ctranslate2


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "export",
        help=summary,
        description="Write a trained model as a CTranslate2 model directory (weights, "
        "vocabulary, spm.model and a README.md on using it with CTranslate2 and "
        "SentencePiece alone), also for `transduce translate --engine ctranslate2 "
        "OUT_DIR`. int8 quantization is the fastest on CPUs. The run's "
        "decoding.json (transduce tune) travels with it.",
    )
    parser.add_argument(
        "model",
        metavar="RUN_DIR|CHECKPOINT",
        help="a translation run directory (its averaged, else best, else newest "
        "checkpoint) or a checkpoint file",
    )
    parser.add_argument(
        "out_dir", metavar="OUT_DIR", help="a new directory (or an earlier export, with --force)"
    )
    parser.add_argument(
        "--format",
        default="ctranslate2",
        choices=["ctranslate2"],
        help="the model format (default ctranslate2, the only one so far)",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace OUT_DIR if it holds an earlier export"
    )
    parser.add_argument(
        "--quantization",
        default="float32",
        choices=["float32", "int8", "int8_float32", "bfloat16", "int8_bfloat16"],
        help="weight type (default float32)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = export_ctranslate2(args.model, args.out_dir, args.quantization, args.force)
    print(f"wrote {out}")
    return 0
