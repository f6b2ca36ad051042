"""Assemble one results.json from the results.json of several run.py folders: a later
folder's row replaces an earlier one's of the same dataset, model and horizon. It puts a
search's new rows in place of old ones beside everything else, for blend.py and bag.py.

    python benchmarks/forecasting/merge.py --out benchmarks/forecasting/search/S/seed_1 \
        benchmarks/forecasting/search/channel_duet/members/seed_1 \
        benchmarks/forecasting/search/S/new_rows_seed_1 [--horizons 96,720]

Every row must name its run directory ("run"), since the merged rows' runs may lie under
several --runs folders. Nothing is written unless every folder reads.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from run import key, load_saved, others  # noqa: E402

from transduce.io import write_text  # noqa: E402


def merged(folders: list[Path], horizons: list[int] | None = None) -> dict:
    """The rows of FOLDER/results.json for each folder in turn, later ones replacing; from the
    folders after the first, only the rows of ``horizons`` if given."""
    rows, runs = [], []
    for i, folder in enumerate(folders):
        if not (folder / "results.json").is_file():
            raise SystemExit(f"{folder}: no results.json there (run.py --out writes it)")
        try:
            saved = load_saved(folder)
        except (ValueError, KeyError) as error:
            raise SystemExit(f"{folder / 'results.json'}: not run.py's results ({error})")
        unnamed = [r for r in saved["results"] if "run" not in r]
        if unnamed:
            which = " ".join(map(str, key(unnamed[0])))
            raise SystemExit(f"{folder / 'results.json'}: the row {which} names no run "
                             "directory; merge only rows that do")
        taken = [r for r in saved["results"]
                 if i == 0 or horizons is None or r["horizon"] in horizons]
        rows = others({"results": rows}, taken) + taken
        runs += [{**entry, "from": str(folder), "taken": len(taken)} for entry in saved["runs"]]
    return {"merged": [str(f) for f in folders], "runs": runs, "results": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path,
                        help="run.py --out folders, earliest first")
    parser.add_argument("--out", required=True, type=Path,
                        help="folder for the merged results.json")
    parser.add_argument("--horizons", type=lambda text: [int(n) for n in text.split(",")],
                        help="from the folders after the first, take only these horizons' "
                             "rows (default: all)")
    args = parser.parse_args()
    saved = merged(args.folders, args.horizons)
    write_text(args.out / "results.json", json.dumps(saved, indent=2) + "\n")
    print(f"{args.out / 'results.json'}: {len(saved['results'])} rows from "
          f"{len(args.folders)} folders")


if __name__ == "__main__":
    main()
