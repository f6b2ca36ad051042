"""Bag the forecasting benchmark's blends over seeds: at each horizon, the equal mean of the
same blend made from runs trained from several seeds (`transduce forecast blend --equal`).

    python benchmarks/forecasting/bag.py --dataset ILI \
        --models patch,channel,linear,transformer,sparse \
        --runs runs/bench/fc_sparse,runs/bench/fc_ili_s1,runs/bench/fc_ili_s2 \
        --out benchmarks/forecasting/search/ili_bag

Each folder of --runs holds one seed's runs and the blends blend.py made of them
(RUNS/blend/DATASET_MODELS_HORIZON). The bags go to RUNS[0]/bag/; their rows, beside each
seed's blend, to OUT/bag_MODELS.json and a table to OUT/bag_MODELS.md. Nothing is chosen on
validation: the weights are 1/n.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from blend import blend_dir, save_rows  # noqa: E402
from report import DATASETS, EVERY_WINDOW, REFERENCE_BATCHES  # noqa: E402

from transduce.cli.main import main as transduce  # noqa: E402
from transduce.runs import BLEND as BLEND_FILE  # noqa: E402


def bag_rows(dataset: str, models: list[str], runs: list[Path]) -> list[dict]:
    horizons = DATASETS[dataset][2]
    blends = {h: [blend_dir(r, dataset, models, h) for r in runs] for h in horizons}
    missing = [d for ds in blends.values() for d in ds if not (d / BLEND_FILE).is_file()]
    if missing:  # before anything is written
        raise SystemExit(f"{missing[0]}: no blend there; make it first with blend.py "
                         f"--models {','.join(models)} --runs {missing[0].parent.parent}")
    rows = []
    for horizon in horizons:
        out = runs[0] / "bag" / f"{dataset}_{'+'.join(models)}_{horizon}_x{len(runs)}"
        scoring = [f"--drop-last={b}" for b in REFERENCE_BATCHES[dataset]]
        if transduce(["forecast", "blend", "--equal", *map(str, blends[horizon]),
                      "--out", str(out), *scoring]) != 0:
            raise SystemExit(f"bagging {dataset} {horizon} failed")
        record = json.loads((out / BLEND_FILE).read_text())
        members = [json.loads((d / BLEND_FILE).read_text()) for d in blends[horizon]]
        test = record["test"]
        rows.append({"dataset": dataset, "horizon": horizon, "models": models,
                     "runs": [str(r) for r in runs],
                     "val_mse": round(record["val_mse"], 4), "mse": round(test["mse"], 4),
                     "mae": round(test["mae"], 4),
                     "val_mse_each": [round(m["val_mse"], 4) for m in members],
                     "test_mse_each": [round(m["test"]["mse"], 4) for m in members],
                     "drop_last": {b: round(r["mse"], 4)
                                   for b, r in test.get("drop_last", {}).items()}})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def markdown(rows: list[dict], command: str, seconds: float) -> str:
    runs = rows[0]["runs"]
    dataset = rows[0]["dataset"]

    def line(label, values):
        mean = sum(values) / len(values)
        return f"| {label} | " + " | ".join(f"{v:.4f}" for v in values) + f" | {mean:.4f} |"
    lines = [f"Command: `{command}` ({seconds / 60:.1f} min on this machine).", "",
             f"### {dataset}: validation MSE, then test MSE on every window", "",
             "| | " + " | ".join(str(r["horizon"]) for r in rows) + " | mean |",
             "|---|" + "---:|" * (len(rows) + 1)]
    for i, run in enumerate(runs):
        lines.append(line(f"blend of {run}, validation", [r["val_mse_each"][i] for r in rows]))
    lines.append(line(f"bag of the {len(runs)}, validation", [r["val_mse"] for r in rows]))
    for i, run in enumerate(runs):
        lines.append(line(f"blend of {run}, test", [r["test_mse_each"][i] for r in rows]))
    lines.append(line(f"bag of the {len(runs)}, test", [r["mse"] for r in rows]))
    for name, value in EVERY_WINDOW.get(dataset, {}).items():
        lines.append(f"| {name}, published, every window | " + " | ".join("–" for _ in rows) +
                     f" | {value:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True, choices=list(DATASETS))
    parser.add_argument("--models", required=True,
                        help="the models each seed's blend holds, comma-separated, as given "
                             "to blend.py")
    parser.add_argument("--runs", required=True,
                        help="the run folders of the seeds, comma-separated (two or more)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the table")
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    runs = [Path(r) for r in args.runs.split(",") if r]
    if len(runs) < 2:
        raise SystemExit("--runs: give the run folders of two or more seeds")
    start = time.perf_counter()
    rows = bag_rows(args.dataset, models, runs)
    save_rows(args.out, "bag_" + "+".join(models), rows, markdown, time.perf_counter() - start)


if __name__ == "__main__":
    main()
