"""`transduce data multi30k --dest DIR [--from LOCAL_DIR]`, `transduce data m4 --from DIR
--dest DIR [--frequency Hourly]`."""

from __future__ import annotations

import argparse
from pathlib import Path

from transduce.data.multi30k import DEFAULT_URL, fetch_multi30k
from transduce.data.panel import M4_FREQUENCIES, m4_wide, write_panel
from transduce.errors import UserError
from transduce.io import write_text


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser("data", help=summary, description="Fetch a corpus into a folder.")
    corpora = parser.add_subparsers(title="corpora", metavar="CORPUS", required=True)
    multi30k = corpora.add_parser(
        "multi30k",
        help="Multi30k Task 1: train, val, test_2016_flickr in en, de, fr",
        description="Download Multi30k Task 1 (raw, original casing) from the multi30k/dataset "
        "repository, or copy it from a local folder; every file's line count is "
        "checked before anything is written.",
    )
    multi30k.add_argument("--dest", required=True, help="folder to put the files in")
    multi30k.add_argument(
        "--from",
        dest="local",
        metavar="LOCAL_DIR",
        help="copy from this folder (plain or .gz files) instead of downloading",
    )
    multi30k.add_argument(
        "--url", help="base URL of the gzipped raw files (default: the multi30k/dataset repository)"
    )
    multi30k.set_defaults(run=run)
    m4 = corpora.add_parser(
        "m4",
        help="the M4 competition's wide files as long tables (unique_id, ds, y)",
        description="Convert the M4 competition's FREQUENCY-train.csv and FREQUENCY-test.csv "
        "(a row per series: the id, then its values) into two long tables, "
        "DEST/m4_FREQUENCY_train.csv and DEST/m4_FREQUENCY_test.csv, one row per "
        "series and step; ds counts steps from 1 (M4's files hold no dates), the "
        "test rows continuing where each training series ends. Nothing is "
        "downloaded.",
    )
    m4.add_argument(
        "--from", dest="local", required=True, metavar="DIR", help="the folder holding the M4 files"
    )
    m4.add_argument("--dest", required=True, help="folder to write the two tables to")
    m4.add_argument(
        "--frequency",
        default="Hourly",
        choices=M4_FREQUENCIES,
        help="which M4 files: Hourly (default), Daily, Weekly, Monthly, Quarterly or Yearly",
    )
    m4.set_defaults(run=run_m4)


def run(args: argparse.Namespace) -> int:
    paths = fetch_multi30k(args.dest, args.local, args.url or DEFAULT_URL)
    print(f"wrote {len(paths)} files to {args.dest}")
    return 0


def run_m4(args: argparse.Namespace) -> int:
    source, dest = Path(args.local), Path(args.dest)
    files = [source / f"{args.frequency}-{part}.csv" for part in ("train", "test")]
    for path in files:
        if not path.is_file():
            raise UserError(
                f"{path}: no such file; --from names the folder of the M4 "
                f"files ({args.frequency}-train.csv, {args.frequency}-test.csv)"
            )
    ids, train = m4_wide(files[0])
    test_ids, test = m4_wide(files[1])
    if test_ids != ids:
        raise UserError(f"{files[1]}: its series are not those of {files[0]} in order")
    stem = f"m4_{args.frequency.lower()}"
    dest.mkdir(parents=True, exist_ok=True)
    steps = [list(range(1, len(s) + 1)) for s in train]
    write_text(dest / f"{stem}_train.csv", write_panel(None, ids, steps, train))
    later = [list(range(len(s) + 1, len(s) + 1 + len(t))) for s, t in zip(train, test)]
    write_text(dest / f"{stem}_test.csv", write_panel(None, ids, later, test))
    print(
        f"wrote {len(ids)} series to {dest / (stem + '_train.csv')} "
        f"({sum(len(s) for s in train):,} rows) and {dest / (stem + '_test.csv')} "
        f"({sum(len(t) for t in test):,} rows)"
    )
    return 0
