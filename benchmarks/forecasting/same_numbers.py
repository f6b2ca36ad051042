"""Do the forecasting numbers survive a change of the code? Trains the same short runs with
two versions of transduce side by side (an earlier commit, checked out in a git worktree,
and this tree) and compares what they write, value for value: the shipped ETTh1 `patch`
config and the M4 Hourly chosen recipe (`patch_log_m3`), each cut to ``--steps`` updates
(a deterministic run that agrees on its first validations agrees on the rest). Then this
tree loads the earlier version's runs and forecasts with them.

    python benchmarks/forecasting/same_numbers.py --data ../shared/data --before b450a02

Writes benchmarks/forecasting/same_numbers.json: per case, the largest difference of each
validation measure, of the test scores and of the forecasts, and whether all are equal.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

from m4 import RECIPES, common  # noqa: E402
from m4 import SIZES as M4_SIZES  # noqa: E402

TIMES = {"elapsed_s", "values/s", "tokens/s", "lr"}  # how long, not what


def cases(data: Path, work: Path, steps: int) -> dict[str, dict]:
    """name → how to train, test and predict it (command-line arguments)."""
    m4 = work / "m4"
    budget = [f"max_steps={steps}", f"valid_every={max(1, steps // 3)}", "threads=2"]
    return {
        "ETTh1 patch (configs/forecast_etth1_patch.yaml, horizon 96)": {
            "train": [
                "configs/forecast_etth1_patch.yaml",
                f"csv={data / 'timeseries' / 'ETTh1.csv'}",
                "horizon=96",
                *budget,
            ],
            "test": [],
            "predict": [],
        },
        "M4 Hourly patch_log_m3 (the chosen recipe)": {
            "prepare": ["data", "m4", "--from", str(data / "m4"), "--dest", str(m4)],
            "train": [
                f"csv={m4 / 'm4_hourly_train.csv'}",
                *common(),
                *RECIPES["patch_log_m3"][1],
                *M4_SIZES,
                *budget,
            ],
            "test": ["--csv", str(m4 / "m4_hourly_test.csv")],
            "predict": ["--series", "H1"],
        },
    }


def transduce(source: Path, args: list[str], out: Path | None = None) -> str:
    """Run the CLI of the tree at ``source`` (its src/ first on the path); its stdout."""
    env = {**os.environ, "PYTHONPATH": str(source / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "transduce", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"{source}: transduce {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def metrics(run: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k not in TIMES} for row in rows]


def numbers(value, prefix: str = "") -> dict[str, float]:
    """Every number in a nested record, by its path."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(numbers(v, f"{prefix}{k}."))
        return out
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {prefix.rstrip("."): float(value)}
    return {}


def largest_difference(a: dict, b: dict) -> tuple[float, list[str]]:
    """The largest |a - b| over the paths both hold, and the paths only one holds."""
    shared = set(a) & set(b)
    gap = max((abs(a[k] - b[k]) for k in shared), default=0.0)
    return gap, sorted(set(a) ^ set(b))


def table(text: str) -> dict[str, float]:
    rows = list(csv.reader(io.StringIO(text)))
    return {
        f"{r}.{c}": float(v) for r, row in enumerate(rows[1:]) for c, v in enumerate(row) if _num(v)
    }


def _num(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return "-" not in text[1:] and ":" not in text  # a date is not a number here


def compare(number: int, case: dict, before: Path, work: Path) -> dict:
    runs = {}
    if "prepare" in case:
        transduce(ROOT, case["prepare"])
    for label, source in (("before", before), ("after", ROOT)):
        run = work / f"{label}_{number}"
        transduce(source, ["forecast", "train", *case["train"], "--run-dir", str(run)])
        transduce(source, ["forecast", "test", str(run), *case["test"]])
        runs[label] = run
    old, new = (metrics(runs[k]) for k in ("before", "after"))
    validation = {}
    for key in sorted({k for row in old + new for k in row if k.startswith("val_")}):
        pairs = [(a.get(key), b.get(key)) for a, b in zip(old, new)]
        validation[key] = max(abs(a - b) for a, b in pairs if a is not None and b is not None)
    tests = [json.loads((runs[k] / "test_results.json").read_text()) for k in runs]
    test_gap, test_only = largest_difference(*(numbers(t) for t in tests))
    # this tree forecasts with the earlier version's run, as that version did
    predicted = [
        transduce(source, ["forecast", "predict", str(runs["before"]), *case["predict"]])
        for source in (before, ROOT)
    ]
    forecast_gap, _ = largest_difference(*(table(p) for p in predicted))
    return {
        "validations": len(old),
        "same_validations": len(old) == len(new),
        "validation_max_difference": validation,
        "test_max_difference": test_gap,
        "test_fields_in_one_only": test_only,
        "earlier_run_forecast_max_difference": forecast_gap,
        "identical": all(v == 0 for v in validation.values())
        and test_gap == 0
        and forecast_gap == 0
        and len(old) == len(new),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--before", default="b450a02", help="the earlier commit")
    parser.add_argument("--steps", type=int, default=60, help="updates each run trains")
    parser.add_argument("--out", type=Path, default=HERE / "same_numbers.json")
    args = parser.parse_args()
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        before = work / "before_tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(before), args.before],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            planned = cases(args.data.resolve(), work, args.steps).items()
            results = {
                name: compare(k, case, before, work) for k, (name, case) in enumerate(planned)
            }
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT)
    record = {
        "command": "python benchmarks/forecasting/same_numbers.py "
        f"--before {args.before} --steps {args.steps}",
        "before": args.before,
        "after": head,
        "cases": results,
    }
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
