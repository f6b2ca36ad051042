"""Forecasting benchmark: the standard protocol on ETTh1 and ILI (and ETTh2, exchange_rate),
every horizon, the two Transformers and the two baselines; results beside published figures.

    python benchmarks/forecasting/run.py --data DIR_WITH_CSVS [--minutes 2.5]

Each (dataset, horizon, model) trains in runs/bench/forecast/NAME (resumable: finished runs
are scored again, not retrained), then is scored on the test split. Results:
benchmarks/forecasting/results.json and results.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from transduce.cli.main import main as transduce

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
DATASETS = {  # file, config stem, horizons
    "ETTh1": ("ETTh1.csv", "etth1", [96, 192, 336, 720]),
    "ILI": ("national_illness.csv", "ili", [24, 36, 48, 60]),
    "ETTh2": ("ETTh2.csv", "etth1", [96, 192, 336, 720]),
    "exchange_rate": ("exchange_rate.csv", "exchange", [96, 192, 336, 720]),
}
MODELS = ("repeat", "linear", "patch", "transformer")
# The reference implementations score the test split with a loader that drops the last
# incomplete batch: batch 32 for Informer, DLinear and the repeat baseline (our repeat scores
# equal the published ones with it), PatchTST's training batch for PatchTST (128 ETT, 16 ILI).
REFERENCE_BATCHES = {"ETTh1": (32, 128), "ILI": (32, 16), "ETTh2": (32, 128),
                     "exchange_rate": (32,)}
# Published test MSE (multivariate): the Informer (Zhou et al. 2021), DLinear (Zeng et al.
# 2023, also the source of the repeat-last-value rows) and PatchTST (Nie et al. 2023) papers.
PUBLISHED = {
    "ETTh1": {"repeat last value": [1.295, 1.325, 1.323, 1.339],
              "Informer (96)": [0.865, 1.008, 1.107, 1.181],
              "DLinear (336)": [0.375, 0.405, 0.439, 0.472],
              "PatchTST/42 (336)": [0.375, 0.414, 0.431, 0.449],
              "PatchTST/64 (512)": [0.370, 0.413, 0.422, 0.447]},
    "ILI": {"repeat last value": [6.587, 7.130, 6.575, 5.893],
            "Informer (36)": [5.764, 4.755, 4.763, 5.264],
            "DLinear (104)": [2.215, 1.963, 2.130, 2.368],
            "PatchTST/42 (104)": [1.522, 1.430, 1.673, 1.529],
            "PatchTST/64 (104)": [1.319, 1.579, 1.553, 1.470]},
}

# Published means over the four horizons scored on every test window, as this benchmark's
# first table is (no dropped batch), the input length searched: DUET (Qiu et al., KDD 2025,
# Table 3), where PatchTST, DLinear and iTransformer were re-run the same way.
EVERY_WINDOW = {
    "ETTh1": {"DUET": 0.398, "PatchTST": 0.419, "DLinear": 0.424, "iTransformer": 0.439},
    "ETTh2": {"DUET": 0.334, "PatchTST": 0.351, "DLinear": 0.470, "iTransformer": 0.370},
    "exchange_rate": {"DUET": 0.280, "PatchTST": 0.322, "DLinear": 0.292,
                      "iTransformer": 0.360},
    "ILI": {"DUET": 1.616, "PatchTST": 1.901, "DLinear": 2.185, "iTransformer": 1.857},
}


def run_one(data: Path, dataset: str, horizon: int, model: str, minutes: float,
            overrides: list[str], input_lengths: list[int] | None = None,
            members: list[int] | None = None) -> dict:
    """Train (or resume) one run per input length and ensemble size, keep the one of lowest
    validation MSE (the test split is read only for the kept one), score it on every test
    window."""
    start = time.perf_counter()
    if model not in ("patch", "transformer"):
        members = None  # the baselines are one model each
    trained = {(length, size): train(data, dataset, horizon, model, minutes, overrides, length,
                                     size)
               for length in input_lengths or [None] for size in members or [None]}
    best = min(trained, key=lambda choice: trained[choice][1])
    run_dir = trained[best][0]
    return {"dataset": dataset, "model": model, "horizon": horizon,
            **score(run_dir, dataset), "epochs": trained[best][2],
            "val_mse": round(trained[best][1], 4),
            **({"val_mse_by_input_length": {n: round(v[1], 4) for (n, _), v in trained.items()}}
               if input_lengths else {}),
            **({"members": best[1],
                "val_mse_by_members": {m: round(v[1], 4) for (_, m), v in trained.items()}}
               if members else {}),
            "wall_seconds": round(time.perf_counter() - start, 1)}


def score(run_dir: Path, dataset: str) -> dict:
    """A trained run's test scores: MSE, MAE, ρ-risks and coverage (as calibrated, and as
    trained), and the reference code's drop-last figures."""
    scoring = [f"--drop-last={b}" for b in REFERENCE_BATCHES[dataset]]
    if transduce(["forecast", "test", str(run_dir), *scoring]) != 0:
        raise SystemExit(f"scoring {run_dir} failed")
    result = json.loads((run_dir / "test_results.json").read_text())
    return {"input_length": result["input_length"],
            "mse": round(result["mse"], 4), "mae": round(result["mae"], 4),
            "windows": result["windows"],
            **({"rho_risk": {q: round(r, 4) for q, r in result["rho_risk"].items()},
                "coverage": {band: round(c, 4) for band, c in result["coverage"].items()}}
               if result.get("rho_risk") else {}),
            **({"uncalibrated": {kind: {k: round(v, 4) for k, v in scores.items()}
                                 for kind, scores in result["uncalibrated"].items()}}
               if result.get("uncalibrated") else {}),
            "drop_last": {b: {"mse": round(r["mse"], 4), "mae": round(r["mae"], 4),
                              "windows": r["windows"]}
                          for b, r in result.get("drop_last", {}).items()}}


def run_path(dataset: str, model: str, horizon: int, input_length: int | None,
             members: int | None = None) -> Path:
    name = (f"{dataset}_{model}_{horizon}" + (f"_in{input_length}" if input_length else "")
            + (f"_m{members}" if members and members > 1 else ""))
    return ROOT / "runs" / "bench" / "forecast" / name


def config_path(dataset: str, model: str) -> Path:
    """The config a dataset's runs of ``model`` start from (the baselines: the patch one)."""
    kind = "transformer" if model == "transformer" else "patch"
    config = ROOT / "configs" / f"forecast_{DATASETS[dataset][1]}_{kind}.yaml"
    if not config.exists():  # a dataset without its own config for this model: ETTh1's
        config = ROOT / "configs" / f"forecast_etth1_{kind}.yaml"
    return config


def train(data: Path, dataset: str, horizon: int, model: str, minutes: float,
          overrides: list[str], input_length: int | None,
          members: int | None = None) -> tuple[Path, float, int]:
    """One training run: its directory, its best validation MSE and its epochs. An
    ensemble of M members trains M times as long as one model may."""
    file = DATASETS[dataset][0]
    config = config_path(dataset, model)
    run_dir = run_path(dataset, model, horizon, input_length, members)
    # A linear map learns at a far larger rate than the Transformers (DLinear used 5e-3).
    extra = ["lr=0.005"] if model == "linear" else []
    if model in ("repeat", "linear"):  # the baselines: a point forecast from the values
        extra += ["quantiles=", "patch_calendar=false"]
    if input_length:
        extra.append(f"input_length={input_length}")
    if members:
        extra.append(f"members={members}")
    argv = ["forecast", "train", str(config), f"csv={data / file}", f"model={model}",
            f"horizon={horizon}", f"max_minutes={minutes * (members or 1)}", *extra,
            *overrides, "--run-dir", str(run_dir)]
    if transduce(argv) != 0:
        raise SystemExit(f"{dataset} {model} {horizon} failed")
    scores = [json.loads(line)["val_mse"] for line in (run_dir / "metrics.jsonl").open()
              if '"val_mse"' in line]
    return run_dir, min(scores), len(scores)


def rescore(datasets: list[str], models: list[str], horizons: list[int] | None) -> list[dict]:
    """Calibrate (where the run has quantiles) and score again the runs behind the saved
    rows chosen; their training figures (epochs, wall time, input-length search) stay."""
    rows = []
    for row in load_saved()["results"]:
        if row["dataset"] not in datasets or row["model"] not in models or \
                (horizons and row["horizon"] not in horizons):
            continue
        searched = "val_mse_by_input_length" in row
        run_dir = run_path(row["dataset"], row["model"], row["horizon"],
                           row["input_length"] if searched else None, row.get("members"))
        if "rho_risk" in row or row["model"] in ("patch", "transformer"):
            if transduce(["forecast", "calibrate", str(run_dir)]) != 0:
                raise SystemExit(f"calibrating {run_dir} failed")
        rows.append({**row, **score(run_dir, row["dataset"])})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def table(results: list[dict]) -> str:
    lines = []
    for dataset in DATASETS:
        rows = [r for r in results if r["dataset"] == dataset]
        if not rows:
            continue
        horizons = DATASETS[dataset][2]
        lines += [f"\n### {dataset} (test MSE / MAE)\n",
                  "| model | " + " | ".join(map(str, horizons)) + " | mean MSE |",
                  "|---|" + "---:|" * (len(horizons) + 1)]
        for model in MODELS:
            found = {r["horizon"]: r for r in rows if r["model"] == model}
            if len(found) != len(horizons):
                continue
            cells = [f"{found[h]['mse']:.3f} / {found[h]['mae']:.3f}" for h in horizons]
            mean = sum(found[h]["mse"] for h in horizons) / len(horizons)
            lines.append(f"| transduce {model} | " + " | ".join(cells) + f" | {mean:.3f} |")
        for model in MODELS:
            found = {r["horizon"]: r for r in rows if r["model"] == model}
            if len(found) == len(horizons) and any("val_mse_by_input_length" in r
                                                   for r in found.values()):
                lines.append(f"| transduce {model}: input length chosen on validation | "
                             + " | ".join(str(found[h]["input_length"]) for h in horizons)
                             + " | |")
            if len(found) == len(horizons) and any("val_mse_by_members" in r
                                                   for r in found.values()):
                lines.append(f"| transduce {model}: ensemble members chosen on validation | "
                             + " | ".join(str(found[h].get("members", 1)) for h in horizons)
                             + " | |")
        for name, mean in EVERY_WINDOW.get(dataset, {}).items():
            lines.append(f"| {name} (published, every window, DUET's Table 3) | "
                         + " | ".join("–" for _ in horizons) + f" | {mean:.3f} |")
        for name, values in PUBLISHED.get(dataset, {}).items():
            lines.append(f"| {name} (published, last batch dropped) | "
                         + " | ".join(f"{v:.3f}" for v in values)
                         + f" | {sum(values) / len(values):.3f} |")
        lines += [f"\n{dataset}, scored as the reference code scores (its test loader drops the "
                  "last incomplete batch of B windows), to compare with the published rows "
                  "above:\n",
                  "| model | " + " | ".join(map(str, horizons)) + " | mean MSE |",
                  "|---|" + "---:|" * (len(horizons) + 1)]
        for model in MODELS:
            for b in REFERENCE_BATCHES[dataset]:
                found = {r["horizon"]: r["drop_last"].get(str(b)) for r in rows
                         if r["model"] == model}
                if len(found) != len(horizons) or None in found.values():
                    continue
                cells = [f"{found[h]['mse']:.3f}" for h in horizons]
                mean = sum(found[h]["mse"] for h in horizons) / len(horizons)
                lines.append(f"| transduce {model}, B={b} | " + " | ".join(cells)
                             + f" | {mean:.3f} |")
        lines += probabilistic(rows, horizons)
    return "\n".join(lines) + "\n"


def probabilistic(rows: list[dict], horizons: list[int]) -> list[str]:
    """The quantile outputs' scores: ρ-risk R0.5 / R0.9 (LogSparse's, on the original
    scale) and the share of test values inside the central interval, every window."""
    lines = []
    for model in MODELS:
        found = {r["horizon"]: r for r in rows if r["model"] == model and "rho_risk" in r}
        if len(found) != len(horizons):
            continue
        if not lines:
            band = next(iter(found[horizons[0]]["coverage"]))
            lines = ["\nQuantile outputs on every test window: R0.5 / R0.9 (ρ-risk, lower is "
                     f"better) and the coverage of the {band} interval (nominal "
                     f"{_nominal(band):.0%}); where the band was calibrated on validation "
                     "(`calibrate=true`), the figures as trained → calibrated:\n",
                     "| model | " + " | ".join(map(str, horizons)) + " |",
                     "|---|" + "---:|" * len(horizons)]
        cells = [_scores(found[h]) for h in horizons]
        lines.append(f"| transduce {model} | " + " | ".join(cells) + " |")
    return lines


def _scores(row: dict) -> str:
    """R0.5 / R0.9, coverage; as trained → calibrated where the row was calibrated."""
    def one(scores: dict) -> str:
        return (f"{scores['rho_risk']['0.5']:.3f} / {scores['rho_risk']['0.9']:.3f}, "
                + ", ".join(f"{c:.0%}" for c in scores["coverage"].values()))
    return (f"{one(row['uncalibrated'])} → {one(row)}" if "uncalibrated" in row else one(row))


def _nominal(band: str) -> float:
    low, high = map(float, band.split("-"))
    return high - low


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="folder with the CSV files")
    parser.add_argument("--minutes", type=float, default=2.5,
                        help="training-time cap per (dataset, horizon, model) run")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--horizons", type=lambda text: [int(n) for n in text.split(",")],
                        help="only these horizons (default: the dataset's four)")
    parser.add_argument("--input-lengths", type=lambda text: [int(n) for n in text.split(",")],
                        help="train each run with each of these input lengths and keep the "
                             "one of lowest validation MSE (default: the config's)")
    parser.add_argument("--members", type=lambda text: [int(n) for n in text.split(",")],
                        help="patch and transformer: train each run as an ensemble of each of "
                             "these sizes (members=N, N times the minutes) and keep the one of "
                             "lowest validation MSE (default: the config's)")
    parser.add_argument("--rescore", action="store_true",
                        help="train nothing: calibrate the quantiles of, and score again, the "
                             "runs behind the saved rows of these datasets, models and "
                             "horizons (their training figures stay)")
    parser.add_argument("--render", action="store_true",
                        help="only rewrite results.md from results.json")
    parser.add_argument("overrides", nargs="*", help="config key=value for every run")
    args = parser.parse_intermixed_args()
    if args.render:
        return write_markdown(load_saved())
    start = time.perf_counter()
    command = "python benchmarks/forecasting/run.py " + " ".join(sys.argv[1:])
    if args.rescore:
        results = rescore(args.datasets.split(","), args.models.split(","), args.horizons)
        done, saved = {key(r) for r in results}, load_saved()
        saved["results"] = [r for r in saved["results"] if key(r) not in done] + results
        saved.setdefault("rescored", []).append(
            {"command": command, "total_seconds": round(time.perf_counter() - start),
             "rows": len(results)})
        (HERE / "results.json").write_text(json.dumps(saved, indent=2) + "\n")
        return write_markdown(saved)
    results = []
    for dataset in args.datasets.split(","):
        for horizon in args.horizons or DATASETS[dataset][2]:
            for model in args.models.split(","):
                results.append(run_one(args.data, dataset, horizon, model, args.minutes,
                                       args.overrides, args.input_lengths, args.members))
                print(json.dumps(results[-1]), flush=True)
    # A run of some datasets or models replaces their rows and keeps the others' (with the
    # command that made them), so the benchmark can be run a part at a time.
    done, saved = {key(r) for r in results}, load_saved()  # read now: another may have written
    saved["results"] = [r for r in saved["results"] if key(r) not in done] + results
    saved["runs"].append({"command": command,
                          "total_seconds": round(time.perf_counter() - start),
                          "minutes": args.minutes, "rows": len(results)})
    (HERE / "results.json").write_text(json.dumps(saved, indent=2) + "\n")
    write_markdown(saved)


def key(result: dict) -> tuple:
    return result["dataset"], result["model"], result["horizon"]


def load_saved() -> dict:
    """results.json as {"runs": [...], "results": [...]}, or empty; the file's first form
    (one "command" for every row) becomes one entry of "runs"."""
    path = HERE / "results.json"
    if not path.exists():
        return {"runs": [], "results": []}
    saved = json.loads(path.read_text())
    if "runs" not in saved:
        saved = {"runs": [{"command": saved["command"], "total_seconds": saved["total_seconds"],
                           "minutes": saved["minutes"], "rows": len(saved["results"])}],
                 "results": saved["results"]}
    return saved


def write_markdown(saved: dict) -> None:
    header = "".join(f"- `{r['command']}`: {r['total_seconds'] / 60:.1f} min on this machine, "
                     f"{r['rows']} rows\n" for r in saved["runs"])
    if saved.get("rescored"):
        header += ("\nRe-scored without training (quantile bands calibrated on validation), "
                   "a later one replacing the scores of the rows it covers:\n\n"
                   + "".join(f"- `{r['command']}`: {r['total_seconds'] / 60:.1f} min, "
                             f"{r['rows']} rows\n" for r in saved["rescored"]))
    (HERE / "results.md").write_text("Commands (a later one replaces the rows it ran):\n\n"
                                     + header + table(saved["results"]))
    print((HERE / "results.md").read_text())

if __name__ == "__main__":
    main()
