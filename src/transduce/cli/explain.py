"""`transduce explain RUN`: the explainer's page for a run of any family."""

from __future__ import annotations

import argparse

from transduce.cli import serve


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "explain",
        help=summary,
        description="Serve the explainer on this machine. For a translation or demo run: type "
        "a sentence and step through its decoding token by token (the beam, the "
        "next-token probabilities), see every layer and head attend, open one head "
        "up (q, k, q·k/√d_k, the mask, the softmax, the weighted sum of v), see "
        "the positional encodings. For a forecaster: what it attends to over the series; "
        "for a classifier or tagger: what the pooled position or each word attends to. "
        "Export any view as SVG or PNG. The page is /explain of the same server "
        "`transduce serve` runs; nothing is fetched from the network.",
    )
    serve.add_options(parser)
    parser.set_defaults(run=serve.run, page="/explain")
