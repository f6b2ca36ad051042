"""How much `forecast backtest --jobs 2` saves: the same backtest three ways, side by side.

    python benchmarks/forecasting/backtest_jobs.py --data DIR_WITH_CSVS

exchange_rate's `patch` config at horizon 96, a fixed number of epochs (so every way does
the same work), four folds, each way from scratch in runs/bench/backtest_jobs/WAY:
one fold at a time on one thread, one at a time on every core, and two at a time on one
thread each. Prints and writes benchmarks/forecasting/backtest_jobs.md and .json: the wall
time of each way, its ratio to the first, and the folds' test MSE (which shows whether the
ways trained the same models).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="folder with the CSV files")
    parser.add_argument("--epochs", type=int, default=4, help="epochs per fold")
    parser.add_argument(
        "--folds",
        type=int,
        default=4,
        help="folds (an even number keeps both jobs busy to the end)",
    )
    args = parser.parse_args()
    csv = (args.data / "exchange_rate.csv").resolve()
    if not csv.is_file():
        sys.exit(
            f"backtest_jobs.py: {csv} is missing; --data names the folder that holds "
            "exchange_rate.csv"
        )
    cores = os.cpu_count() or 1
    ways = [
        ("one fold at a time, 1 thread", ["threads=1"]),
        (f"one fold at a time, {cores} threads", [f"threads={cores}"]),
        ("two folds at a time, 1 thread each", ["threads=1", "--jobs", "2"]),
    ]
    rows = []
    for k, (name, extra) in enumerate(ways):
        run = ROOT / "runs" / "bench" / "backtest_jobs" / f"way_{k}"
        shutil.rmtree(run, ignore_errors=True)
        command = [
            sys.executable,
            "-m",
            "transduce",
            "forecast",
            "backtest",
            str(ROOT / "configs" / "forecast_exchange_patch.yaml"),
            f"csv={csv}",
            "horizon=96",
            f"max_epochs={args.epochs}",
            *extra,
            "--folds",
            str(args.folds),
            "--run-dir",
            str(run),
        ]
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        result = json.loads((run / "backtest.json").read_text())
        rows.append(
            {
                "way": name,
                "command": " ".join(command[1:]),
                "seconds": seconds,
                "fold_mse": [f["mse"] for f in result["folds"]],
            }
        )
        print(f"{name}: {seconds:.1f} s", flush=True)
    for row in rows:
        row["speed-up"] = rows[0]["seconds"] / row["seconds"]
    lines = [
        f"# `forecast backtest --jobs`: {args.folds} folds of exchange_rate `patch`, horizon "
        f"96, {args.epochs} epochs each, on {cores} cores",
        "",
        "    python benchmarks/forecasting/backtest_jobs.py --data PATH",
        "",
        "| way | wall s | speed-up | test MSE of each fold |",
        "|---|---:|---:|---|",
    ]
    lines += [
        f"| {r['way']} | {r['seconds']:.1f} | {r['speed-up']:.2f}× | "
        f"{', '.join(f'{m:.4f}' for m in r['fold_mse'])} |"
        for r in rows
    ]
    (HERE / "backtest_jobs.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (HERE / "backtest_jobs.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print("\n".join(lines[4:]))


if __name__ == "__main__":
    main()
