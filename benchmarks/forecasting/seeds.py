"""How much one forecasting run's test MSE owes to its seed, and what averaging seeds gives.

    python benchmarks/forecasting/seeds.py --data DIR_WITH_CSVS --dataset ILI --seeds 2021,1,2,3,4

Trains (or resumes) the benchmark's run of one dataset and model at every horizon once per
seed, each on its own (runs/bench/forecast_seeds/NAME), and scores on validation and test:
every seed alone, and the mean of their forecasts (an ensemble of independently trained
runs; `members=N` trains one side by side). Point forecasts, as trained (no calibration).
Results: benchmarks/forecasting/seeds.json and seeds.md (one section per dataset and model).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from run import DATASETS, ROOT, config_path  # noqa: E402

from transduce.cli.main import main as transduce  # noqa: E402
from transduce.nn.forecasting.ensemble import Ensemble  # noqa: E402
from transduce.tasks.forecasting.evaluation import evaluate  # noqa: E402
from transduce.tasks.forecasting.rundir import load_model, load_run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="folder with the CSV files")
    parser.add_argument("--dataset", required=True, choices=list(DATASETS))
    parser.add_argument("--model", default="patch", choices=["patch", "transformer"])
    parser.add_argument(
        "--seeds", default="2021,1,2,3,4", type=lambda text: [int(n) for n in text.split(",")]
    )
    parser.add_argument("--minutes", type=float, default=2.0, help="training-time cap per run")
    parser.add_argument("--horizons", type=lambda text: [int(n) for n in text.split(",")])
    args = parser.parse_args()
    file, _, horizons = DATASETS[args.dataset]
    config = config_path(args.dataset, args.model)
    rows = []
    for horizon in args.horizons or horizons:
        runs = []
        for seed in args.seeds:
            run_dir = (
                ROOT
                / "runs"
                / "bench"
                / "forecast_seeds"
                / f"{args.dataset}_{args.model}_{horizon}_s{seed}"
            )
            argv = [
                "forecast",
                "train",
                str(config),
                f"csv={args.data / file}",
                f"model={args.model}",
                f"horizon={horizon}",
                f"max_minutes={args.minutes}",
                f"seed={seed}",
                "calibrate=false",
                "threads=1",
                "--run-dir",
                str(run_dir),
            ]
            if transduce(argv) != 0:
                raise SystemExit(f"{run_dir} failed")
            runs.append(run_dir)
        _, _, data = load_run(runs[0], calibrated=False)
        models = [load_model(r, calibrated=False)[1] for r in runs]
        alone = [
            {split: round(evaluate(m, data, split)["mse"], 4) for split in ("val", "test")}
            for m in models
        ]
        mean = Ensemble(models).eval()  # the mean of their forecasts
        rows.append(
            {
                "horizon": horizon,
                "seeds": dict(zip(map(str, args.seeds), alone)),
                "mean_of_seeds": {
                    split: round(evaluate(mean, data, split)["mse"], 4) for split in ("val", "test")
                },
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    path = HERE / "seeds.json"
    saved = json.loads(path.read_text()) if path.exists() else {}
    saved[f"{args.dataset} {args.model}"] = {
        "command": "python benchmarks/forecasting/seeds.py " + " ".join(sys.argv[1:]),
        "rows": rows,
    }
    path.write_text(json.dumps(saved, indent=2) + "\n")
    (HERE / "seeds.md").write_text(markdown(saved))
    print((HERE / "seeds.md").read_text())


def markdown(saved: dict) -> str:
    lines = [
        "Test MSE (every window) of one run per seed and of the mean of their forecasts; "
        "validation MSE in brackets.\n"
    ]
    for name, part in saved.items():
        rows = part["rows"]
        seeds = list(rows[0]["seeds"])
        lines += [
            f"\n### {name}\n",
            f"`{part['command']}`\n",
            "| horizon | "
            + " | ".join(f"seed {s}" for s in seeds)
            + " | mean of the seeds' MSE | MSE of the seeds' mean forecast |",
            "|---|" + "---:|" * (len(seeds) + 2),
        ]
        for row in rows:
            cells = [f"{row['seeds'][s]['test']:.3f} ({row['seeds'][s]['val']:.3f})" for s in seeds]
            average = sum(row["seeds"][s]["test"] for s in seeds) / len(seeds)
            mean = row["mean_of_seeds"]
            lines.append(
                f"| {row['horizon']} | " + " | ".join(cells) + f" | {average:.3f} | "
                f"{mean['test']:.3f} ({mean['val']:.3f}) |"
            )
        per_seed = [sum(r["seeds"][s]["test"] for r in rows) / len(rows) for s in seeds]
        average = sum(per_seed) / len(per_seed)
        mean = sum(r["mean_of_seeds"]["test"] for r in rows) / len(rows)
        lines.append(
            "| mean | "
            + " | ".join(f"{v:.3f}" for v in per_seed)
            + f" | {average:.3f} | {mean:.3f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
