"""`transduce tune RUN_DIR [--last 5 8 10] [--lenpen 0.6 1.0 1.4] [--no-repeat-ngram 0 3]`;
`transduce tune RUN_DIR RUN_DIR … --output DIR` for an ensemble."""

from __future__ import annotations

import argparse

from transduce.errors import UserError
from transduce.runs import lock
from transduce.tasks.translation.tune import Grid, tune, tune_ensemble


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "tune",
        help=summary,
        description="Translate the run's validation files (valid_prefix in its config) with "
        "every combination of the settings below, keep the one of best BLEU (of "
        "those within 0.1 of it, the one whose outputs loop least), and "
        "store it: the average in RUN_DIR/averaged.pt and the decoding in "
        "RUN_DIR/decoding.json, which translate, serve, attention, export and "
        "transduce.load then use unless told otherwise. Test data is never read. "
        "Several runs (other seeds of one recipe) make an ensemble that averages "
        "their probabilities at each step: each run is tuned alone, then the "
        "ensemble's length penalty and block are chosen on the first run's "
        "validation files and stored in --output, a directory that translate, serve "
        "and transduce.load take like a run.",
    )
    parser.add_argument(
        "run_dir",
        nargs="+",
        metavar="RUN_DIR",
        help="a translation run directory (transduce train --run-dir); several for an ensemble",
    )
    parser.add_argument(
        "--output",
        "--out",
        dest="out",
        help="with several runs: the ensemble directory to write (--out: the same)",
    )
    parser.add_argument(
        "--last",
        type=int,
        nargs="+",
        default=[5, 8, 10],
        metavar="N",
        help="numbers of newest step checkpoints to average (default 5 8 10)",
    )
    parser.add_argument(
        "--lenpen",
        type=float,
        nargs="+",
        default=[0.6, 1.0, 1.4],
        metavar="A",
        help="length penalties α to try (default 0.6 1.0 1.4)",
    )
    parser.add_argument(
        "--no-repeat-ngram",
        type=int,
        nargs="+",
        default=[0, 3],
        metavar="N",
        help="n-gram blocks to try, 0 for none (default 0 3)",
    )
    parser.add_argument("--beam", type=int, default=5, help="beam size (default 5)")
    parser.add_argument(
        "--metric",
        default="bleu",
        choices=["bleu", "bleu_tok", "chrf"],
        help="what to maximise: cased sacreBLEU (default), the literature's "
        "tokenized lowercased BLEU, or chrF2",
    )
    parser.add_argument(
        "--sentences",
        type=int,
        default=0,
        help="use only the first N validation lines, for speed (default 0: all)",
    )
    parser.add_argument("--device", default="auto", help="auto, cpu, mps, cuda or cuda:N")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    grid = Grid(
        tuple(args.last),
        tuple(args.lenpen),
        tuple(args.no_repeat_ngram),
        args.beam,
        args.metric,
        args.sentences,
    )
    if len(args.run_dir) > 1 and not args.out:
        raise UserError("several runs make an ensemble: give --output DIR to store it in")
    if len(args.run_dir) == 1 and args.out:
        raise UserError("--output is for an ensemble: give two or more run directories")
    if args.out:
        chosen, rows = tune_ensemble(args.run_dir, args.out, grid, args.device)
        where = f"{args.out}/ensemble.json and {args.out}/decoding.json"
    else:
        # the run's one writer: a second tune would share tune.partial.jsonl, and a tune
        # beside a training would leave averaged.pt and decoding.json stale at once
        with lock(args.run_dir[0], "wait for it to finish"):
            chosen, rows = tune(args.run_dir[0], grid, args.device)
        where = f"{args.run_dir[0]}/averaged.pt and {args.run_dir[0]}/decoding.json"
    label = "BLEU tok" if args.metric == "bleu_tok" else "BLEU"  # the column it chose by
    print(f"{'last':>4} {'α':>4} {'block':>5} {label:>8} {'chrF2':>6} {'looping':>7}")
    for r in rows:
        mark = (
            " *"
            if (r.get("last", 0), r["lenpen"], r["no_repeat_ngram"])
            == (chosen.last, chosen.lenpen, chosen.no_repeat_ngram)
            else ""
        )
        bleu = r.get("bleu_tok", r["bleu"]) if args.metric == "bleu_tok" else r["bleu"]
        last = r.get("last", "own")
        print(
            f"{last:>4} {r['lenpen']:>4g} {r['no_repeat_ngram']:>5} {bleu:>8.2f} "
            f"{r['chrf']:>6.2f} {100 * r['looping_rate']:>6.1f}%{mark}"
        )
    block = f", no {chosen.no_repeat_ngram}-gram twice" if chosen.no_repeat_ngram else ""
    averaged = (
        f"the last {chosen.last} checkpoints averaged" if chosen.last else "each run's own average"
    )
    print(
        f"chosen on validation (*): {averaged}, beam {chosen.beam}, α {chosen.lenpen:g}"
        f"{block}; wrote {where}"
    )
    return 0
