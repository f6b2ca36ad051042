"""`transduce data multi30k --dest DIR [--from LOCAL_DIR]`."""

from __future__ import annotations

import argparse

from transduce.data.multi30k import DEFAULT_URL, fetch_multi30k


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser("data", help=summary,
                                 description="Fetch a corpus into a folder.")
    corpora = parser.add_subparsers(title="corpora", metavar="CORPUS", required=True)
    multi30k = corpora.add_parser(
        "multi30k", help="Multi30k Task 1: train, val, test_2016_flickr in en, de, fr",
        description="Download Multi30k Task 1 (raw, original casing) from the multi30k/dataset "
                    "repository, or copy it from a local folder; every file's line count is "
                    "checked before anything is written.")
    multi30k.add_argument("--dest", required=True, help="folder to put the files in")
    multi30k.add_argument("--from", dest="local", metavar="LOCAL_DIR",
                          help="copy from this folder (plain or .gz files) instead of downloading")
    multi30k.add_argument("--url", help="base URL of the gzipped raw files (default: the "
                                        "multi30k/dataset repository)")
    multi30k.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    paths = fetch_multi30k(args.dest, args.local, args.url or DEFAULT_URL)
    print(f"wrote {len(paths)} files to {args.dest}")
    return 0
