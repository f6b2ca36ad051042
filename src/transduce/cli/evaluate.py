"""`transduce evaluate --hyp FILE --ref FILE`."""

from __future__ import annotations

import argparse
import json


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "evaluate", help="score translations with sacreBLEU (BLEU, lowercased BLEU, chrF)",
        description="Cased sacreBLEU with its signature, lowercased BLEU (what published "
                    "Multi30k figures use) and chrF2.")
    parser.add_argument("--hyp", required=True, help="translations, one per line")
    parser.add_argument("--ref", required=True, help="references, aligned with --hyp")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from transduce.data.text import read_parallel
    from transduce.evaluation import corpus_scores

    hyps, refs = read_parallel(args.hyp, args.ref)
    scores = corpus_scores(hyps, refs)
    if args.json:
        print(json.dumps(scores))
        return 0
    for name, label in (("bleu", "BLEU"), ("bleu_lc", "BLEU (lowercased)"), ("chrf", "chrF2")):
        print(f"{label:<18} {scores[name]:6.2f}  {scores[name + '_signature']}")
    return 0
