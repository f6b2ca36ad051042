"""Blend the forecasting benchmark's runs of several models, horizon by horizon, with
`transduce forecast blend` (weights chosen on validation), and score the blends on test.

    python benchmarks/forecasting/blend.py --results benchmarks/forecasting --models patch,linear

Reads the rows of RESULTS/results.json (which run.py wrote), finds each row's run directory
(its "run", or where run.py puts it under --runs), and for every dataset and horizon that has
a row of each model, writes the blend's row to RESULTS/blend_MODELS.json and a table to
blend_MODELS.md (MODELS: e.g. patch+linear).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from report import DATASETS, EVERY_WINDOW, REFERENCE_BATCHES  # noqa: E402
from run import RUNS, load_saved, run_path  # noqa: E402

from transduce.cli.main import main as transduce  # noqa: E402
from transduce.io import write_text  # noqa: E402
from transduce.runs import BLEND as BLEND_FILE  # noqa: E402


def row_run(row: dict, runs: Path) -> Path:
    """The run directory behind a saved row."""
    if "run" in row:
        return Path(row["run"])
    searched = "val_mse_by_input_length" in row
    return run_path(
        row["dataset"],
        row["model"],
        row["horizon"],
        row["input_length"] if searched else None,
        row.get("members"),
        runs,
    )


def blend_dir(runs: Path, dataset: str, models: list[str], horizon: int) -> Path:
    """Where the blend of ``models``' runs at ``horizon`` goes (the searches' bag script read
    it there)."""
    return runs / "blend" / f"{dataset}_{'+'.join(models)}_{horizon}"


def save_rows(folder: Path, name: str, rows: list[dict], markdown, seconds: float) -> None:
    """FOLDER/NAME.json (this script's command, its seconds and the rows) and FOLDER/NAME.md
    (``markdown(rows, command, seconds)``)."""
    command = f"python benchmarks/forecasting/{Path(sys.argv[0]).name} " + " ".join(sys.argv[1:])
    write_text(
        folder / f"{name}.json",
        json.dumps({"command": command, "seconds": round(seconds), "results": rows}, indent=2)
        + "\n",
    )
    write_text(folder / f"{name}.md", markdown(rows, command, seconds).rstrip("\n") + "\n")


def blend_rows(
    results: Path, models: list[str], datasets: list[str], step: float, runs: Path
) -> list[dict]:
    by_key = {(r["dataset"], r["model"], r["horizon"]): r for r in load_saved(results)["results"]}
    rows = []
    for dataset in datasets:
        for horizon in DATASETS[dataset][2]:
            found = [by_key.get((dataset, model, horizon)) for model in models]
            if None in found:
                continue
            dirs = [row_run(row, runs) for row in found]
            missing = [d for d in dirs if not d.is_dir()]
            if missing:
                raise SystemExit(f"{missing[0]}: no such run directory (give --runs)")
            out = blend_dir(runs, dataset, models, horizon)
            scoring = [f"--drop-last={b}" for b in REFERENCE_BATCHES[dataset]]
            if (
                transduce(
                    [
                        "forecast",
                        "blend",
                        *map(str, dirs),
                        "--out",
                        str(out),
                        "--step",
                        str(step),
                        *scoring,
                    ]
                )
                != 0
            ):
                raise SystemExit(f"blending {dataset} {horizon} failed")
            record = json.loads((out / BLEND_FILE).read_text())
            test = record["test"]
            rows.append(
                {
                    "dataset": dataset,
                    "horizon": horizon,
                    "models": models,
                    "weights": record["weights"],
                    "val_mse": round(record["val_mse"], 4),
                    "val_mse_alone": [round(v, 4) for v in record["val_mse_alone"]],
                    "test_mse_alone": [row["mse"] for row in found],
                    "mse": round(test["mse"], 4),
                    "mae": round(test["mae"], 4),
                    "drop_last": {
                        b: round(r["mse"], 4) for b, r in test.get("drop_last", {}).items()
                    },
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def markdown(rows: list[dict], command: str, seconds: float) -> str:
    lines = [
        f"Command: `{command}` ({seconds / 60:.1f} min on this machine).",
        "",
        "Test MSE on every test window; the weights chosen on validation (grid step as "
        'given). "alone": each model\'s own row of results.json.',
        "",
    ]
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        mine = [r for r in rows if r["dataset"] == dataset]
        models = mine[0]["models"]
        lines += [
            f"### {dataset}",
            "",
            "| | " + " | ".join(str(r["horizon"]) for r in mine) + " | mean |",
            "|---|" + "---:|" * (len(mine) + 1),
        ]
        for i, model in enumerate(models):
            alone = [r["test_mse_alone"][i] for r in mine]
            lines.append(
                f"| {model} alone | "
                + " | ".join(f"{v:.3f}" for v in alone)
                + f" | {sum(alone) / len(alone):.3f} |"
            )
        blended = [r["mse"] for r in mine]
        lines.append(
            "| blend | "
            + " | ".join(f"{v:.3f}" for v in blended)
            + f" | **{sum(blended) / len(blended):.3f}** |"
        )
        lines.append(
            "| weights ("
            + ", ".join(models)
            + ") | "
            + " | ".join("/".join(f"{w:g}" for w in r["weights"]) for r in mine)
            + " | |"
        )
        published = EVERY_WINDOW.get(dataset, {})
        if published:
            lines.append(
                "| published, every window | "
                + " | ".join("–" for _ in mine)
                + " | "
                + ", ".join(f"{name} {v:.3f}" for name, v in published.items())
                + " |"
            )
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--results",
        type=Path,
        default=HERE,
        help="folder of run.py's results.json (default: this script's)",
    )
    parser.add_argument(
        "--models",
        default="patch,linear",
        help="models to blend, comma-separated (default patch,linear)",
    )
    parser.add_argument("--datasets", help="default: every dataset")
    parser.add_argument("--step", type=float, default=0.25, help="the weights' grid step")
    parser.add_argument(
        "--runs",
        type=Path,
        default=RUNS,
        help="where run.py put the run directories of rows that do not name "
        f"theirs (default {RUNS})",
    )
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    datasets = args.datasets.split(",") if args.datasets else list(DATASETS)
    unknown = [d for d in datasets if d not in DATASETS]
    if len(models) < 2 or unknown:
        raise SystemExit(
            f"--datasets: unknown {unknown[0]}" if unknown else "--models: give two or more"
        )
    start = time.perf_counter()
    rows = blend_rows(args.results, models, datasets, args.step, args.runs)
    if not rows:
        raise SystemExit(
            f"{args.results / 'results.json'}: no dataset and horizon has a row "
            f"of each of {', '.join(models)}"
        )
    save_rows(
        args.results, "blend_" + "+".join(models), rows, markdown, time.perf_counter() - start
    )


if __name__ == "__main__":
    main()
