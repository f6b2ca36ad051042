"""`transduce evaluate --hyp FILE --ref FILE`."""

from __future__ import annotations

import argparse
import json

from transduce.data.text import read_lines, read_parallel
from transduce.errors import UserError
from transduce.evaluation import corpus_scores, moses_languages


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "evaluate",
        help=summary,
        description="Cased sacreBLEU with its signature, lowercased BLEU and chrF2; with a "
        "language (--lang, or the reference's .de/.en/.fr suffix) also the BLEU "
        "that published Multi30k figures use: hypothesis lowercased, Moses-"
        "normalised and Moses-tokenised (sacremoses), scored word for word against "
        "the official *.lc.norm.tok.* reference (--tok-ref) or the raw reference "
        "tokenised the same way.",
    )
    parser.add_argument("--hyp", required=True, help="translations, one per line")
    parser.add_argument("--ref", required=True, help="references, aligned with --hyp")
    parser.add_argument(
        "--lang",
        help="the target language (default: the --ref suffix, "
        "if sacremoses knows it as a language code)",
    )
    parser.add_argument(
        "--tok-ref", help="the official tokenised reference, e.g. test_2016_flickr.lc.norm.tok.de"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    known = moses_languages()
    if args.lang is not None and args.lang not in known:
        raise UserError(
            f"--lang {args.lang}: sacremoses has no tokenisation rules for it; "
            f"give one of {', '.join(sorted(known))}"
        )
    hyps, refs = read_parallel(args.hyp, args.ref)
    lang = args.lang
    suffix = args.ref.rsplit(".", 1)[-1]
    if lang is None and suffix in known:  # a suffix that names no language is not one
        lang = suffix
    tok_refs = None
    if args.tok_ref:
        if lang is None:
            raise UserError("--tok-ref needs the language: give --lang")
        tok_refs = read_lines(args.tok_ref)
        if len(tok_refs) != len(hyps):
            raise UserError(
                f"{args.tok_ref}: {len(tok_refs)} lines, {args.hyp} has "
                f"{len(hyps)}; give the tokenised form of --ref"
            )
        capital = next((i for i, line in enumerate(tok_refs, 1) if line != line.lower()), 0)
        if capital:  # the hypotheses are lowercased: its words could never match
            raise UserError(
                f"{args.tok_ref}:{capital}: capital letters, so no lowercased "
                "tokenised reference (*.lc.norm.tok.*); give one, or leave out "
                "--tok-ref to tokenise --ref"
            )
    scores = corpus_scores(hyps, refs, lang, tok_refs)
    if args.json:
        print(json.dumps(scores))
        return 0
    names = [("bleu", "BLEU"), ("bleu_lc", "BLEU (lowercased)"), ("chrf", "chrF2")]
    if "bleu_tok" in scores:
        names.append(("bleu_tok", "BLEU (tok, lc)"))
    for name, label in names:
        print(f"{label:<18} {scores[name]:6.2f}  {scores[name + '_signature']}")
    return 0
