"""Forecasting benchmark: the standard protocol on ETTh1 and ILI (and ETTh2, exchange_rate),
every horizon, the two Transformers and the two baselines; results beside published figures.

    python benchmarks/forecasting/run.py --data DIR_WITH_CSVS [--minutes 2.5]
    python benchmarks/forecasting/run.py --data DIR_WITH_CSVS \\
        --plan benchmarks/forecasting/plan.yaml --jobs 2

Each (dataset, horizon, model) trains in runs/bench/forecast/NAME (resumable: finished runs
are scored again, not retrained), then is scored on the test split. A plan gives each
dataset and model its own minutes, ensemble members and input length (plan.yaml: the
settings the searches chose on validation); ``--jobs N`` trains N rows at a time, each in
its own process with cores / N threads. A plan's ``settings`` are config items for one
model's rows (all of them, or per horizon), before those of the command line (plan.py).
Results: benchmarks/forecasting/results.json (saved after every row) and results.md.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from options import command_line  # noqa: E402
from plan import plan_tasks  # noqa: E402
from report import DATASETS, MODELS, REFERENCE_BATCHES, write_markdown  # noqa: E402
from saved import load_saved, others, save  # noqa: E402, F401 (load_saved: blend.py's)

from transduce.cli.main import main as transduce  # noqa: E402
from transduce.io import recorded_path, write_text  # noqa: E402
from transduce.tasks.forecasting.models import NEURAL  # noqa: E402

ROOT = HERE.parents[1]
RUNS = ROOT / "runs" / "bench" / "forecast"
# The `sparse` model's period: a day of hours (SparseTSF's for ETTh), a year of weeks (ILI's
# input of 104 is two), a week of days (exchange_rate has no cycle; a week is the nearest
# calendar one).
SPARSE_PERIODS = {"ETTh1": 24, "ETTh2": 24, "ILI": 52, "exchange_rate": 7}


def run_one(
    data: Path,
    dataset: str,
    horizon: int,
    model: str,
    minutes: float,
    overrides: list[str],
    input_lengths: list[int] | None = None,
    members: list[int] | None = None,
    runs: Path = RUNS,
) -> dict:
    """Train (or resume) one run per input length and ensemble size, keep the one of lowest
    validation MSE (the test split is read only for the kept one), score it on every test
    window."""
    start = time.perf_counter()
    if model not in NEURAL:
        members = None  # the baselines are one model each
    trained = {
        (length, size): train(data, dataset, horizon, model, minutes, overrides, length, size, runs)
        for length in input_lengths or [None]
        for size in members or [None]
    }
    best = min(trained, key=lambda choice: trained[choice][1])
    run_dir = trained[best][0]
    return {
        "dataset": dataset,
        "model": model,
        "horizon": horizon,
        "run": recorded_path(run_dir, ROOT),
        **score(run_dir, dataset),
        "epochs": trained[best][2],
        "val_mse": round(trained[best][1], 4),
        **(
            {"val_mse_by_input_length": {n: round(v[1], 4) for (n, _), v in trained.items()}}
            if input_lengths
            else {}
        ),
        **(
            {
                "members": best[1],
                "val_mse_by_members": {m: round(v[1], 4) for (_, m), v in trained.items()},
            }
            if members
            else {}
        ),
        "wall_seconds": round(time.perf_counter() - start, 1),
    }


def score(run_dir: Path, dataset: str) -> dict:
    """A trained run's test scores: MSE, MAE, ρ-risks and coverage (as calibrated, and as
    trained), and the reference code's drop-last figures."""
    scoring = [f"--drop-last={b}" for b in REFERENCE_BATCHES[dataset]]
    if transduce(["forecast", "test", str(run_dir), *scoring]) != 0:
        raise SystemExit(f"scoring {run_dir} failed")
    result = json.loads((run_dir / "test_results.json").read_text())
    return {
        "input_length": result["input_length"],
        "mse": round(result["mse"], 4),
        "mae": round(result["mae"], 4),
        "windows": result["windows"],
        **(
            {
                "rho_risk": {q: round(r, 4) for q, r in result["rho_risk"].items()},
                "coverage": {band: round(c, 4) for band, c in result["coverage"].items()},
            }
            if result.get("rho_risk")
            else {}
        ),
        **(
            {
                "uncalibrated": {
                    kind: {k: round(v, 4) for k, v in scores.items()}
                    for kind, scores in result["uncalibrated"].items()
                }
            }
            if result.get("uncalibrated")
            else {}
        ),
        "drop_last": {
            b: {"mse": round(r["mse"], 4), "mae": round(r["mae"], 4), "windows": r["windows"]}
            for b, r in result.get("drop_last", {}).items()
        },
    }


def run_path(
    dataset: str,
    model: str,
    horizon: int,
    input_length: int | None,
    members: int | None = None,
    runs: Path = RUNS,
) -> Path:
    name = (
        f"{dataset}_{model}_{horizon}"
        + (f"_in{input_length}" if input_length else "")
        + (f"_m{members}" if members and members > 1 else "")
    )
    return runs / name


def config_path(dataset: str, model: str) -> Path:
    """The config a dataset's runs of ``model`` start from (the baselines: the patch one)."""
    kind = model if model in ("transformer", "channel") else "patch"
    config = ROOT / "configs" / f"forecast_{DATASETS[dataset][1]}_{kind}.yaml"
    if not config.exists():  # a dataset without its own config for this model: ETTh1's
        config = ROOT / "configs" / f"forecast_etth1_{kind}.yaml"
    return config


def train(
    data: Path,
    dataset: str,
    horizon: int,
    model: str,
    minutes: float,
    overrides: list[str],
    input_length: int | None,
    members: int | None = None,
    runs: Path = RUNS,
) -> tuple[Path, float, int]:
    """One training run: its directory, its best validation MSE and its epochs. An
    ensemble of M members trains M times as long as one model may."""
    file = DATASETS[dataset][0]
    config = config_path(dataset, model)
    run_dir = run_path(dataset, model, horizon, input_length, members, runs)
    # A linear map learns at a far larger rate than the Transformers (DLinear used 5e-3).
    extra = ["lr=0.005"] if model == "linear" else []
    # SparseTSF's published recipe, its period the data's main cycle; its code's default
    # rate decay (x0.9 after each epoch from the fourth) is in plan.yaml where validation chose it
    if model == "sparse":
        extra = [
            f"period={SPARSE_PERIODS[dataset]}",
            "lr=0.02",
            "batch_size=256",
            "max_epochs=30",
            "patience=5",
        ]
    if input_length:
        extra.append(f"input_length={input_length}")
    if members:
        extra.append(f"members={members}")
    argv = [
        "forecast",
        "train",
        str(config),
        f"csv={data / file}",
        f"model={model}",
        f"horizon={horizon}",
        f"max_minutes={minutes * (members or 1)}",
        *extra,
        *overrides,
        "--run-dir",
        str(run_dir),
    ]
    if transduce(argv) != 0:
        raise SystemExit(f"{dataset} {model} {horizon} failed")
    scores = [
        json.loads(line)["val_mse"]
        for line in (run_dir / "metrics.jsonl").open()
        if '"val_mse"' in line
    ]
    return run_dir, min(scores), len(scores)


def rescore(
    datasets: list[str], models: list[str], horizons: list[int] | None, out: Path = HERE
) -> list[dict]:
    """Calibrate (where the run has quantiles) and score again the runs behind the saved
    rows chosen; their training figures (epochs, wall time, input-length search) stay."""
    rows = []
    for row in load_saved(out)["results"]:
        if (
            row["dataset"] not in datasets
            or row["model"] not in models
            or (horizons and row["horizon"] not in horizons)
        ):
            continue
        searched = "val_mse_by_input_length" in row
        run_dir = run_path(
            row["dataset"],
            row["model"],
            row["horizon"],
            row["input_length"] if searched else None,
            row.get("members"),
        )
        if "rho_risk" in row or row["model"] in ("patch", "transformer"):
            if transduce(["forecast", "calibrate", str(run_dir)]) != 0:
                raise SystemExit(f"calibrating {run_dir} failed")
        rows.append({**row, **score(run_dir, row["dataset"])})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    args = command_line(__doc__.splitlines()[0], RUNS, ROOT, HERE).parse_intermixed_args()
    out = args.out
    if args.render:
        return write_markdown(load_saved(out), out)
    start = time.perf_counter()
    command = "python benchmarks/forecasting/run.py " + " ".join(sys.argv[1:])
    if args.rescore:
        datasets = args.datasets.split(",") if args.datasets else list(DATASETS)
        models = args.models.split(",") if args.models else list(MODELS)
        results = rescore(datasets, models, args.horizons, out)
        saved = load_saved(out)
        saved["results"] = others(saved, results) + results
        saved.setdefault("rescored", []).append(
            {
                "command": command,
                "total_seconds": round(time.perf_counter() - start),
                "rows": len(results),
            }
        )
        write_text(out / "results.json", json.dumps(saved, indent=2) + "\n")
        return write_markdown(saved, out)
    if args.jobs < 1:
        raise SystemExit(f"--jobs={args.jobs}: give 1 or more")
    tasks = (
        plan_tasks(args.plan, args.datasets, args.models, args.horizons)
        if args.plan
        else [
            {
                "dataset": dataset,
                "horizon": horizon,
                "model": model,
                "minutes": args.minutes,
                "input_lengths": args.input_lengths,
                "members": args.members,
            }
            for dataset in (args.datasets or ",".join(DATASETS)).split(",")
            for horizon in args.horizons or DATASETS[_known(dataset)][2]
            for model in (args.models or ",".join(MODELS)).split(",")
        ]
    )
    overrides = list(args.overrides)
    if args.jobs > 1 and not any(o.startswith("threads=") for o in overrides):
        overrides.append(f"threads={max(1, (os.cpu_count() or 1) // args.jobs)}")
    args.runs.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    entry = {
        "command": command,
        "total_seconds": 0,
        **({"minutes": args.minutes} if not args.plan else {}),
        "rows": 0,
    }
    results: list[dict] = []

    def finished(row: dict) -> None:
        # Saved after every row, so a benchmark that dies keeps what it finished. A run of
        # some datasets or models replaces their rows and keeps the others' (with the command
        # that made them), so the benchmark can be run a part at a time.
        results.append(row)
        entry.update(total_seconds=round(time.perf_counter() - start), rows=len(results))
        print(f"[{len(results)}/{len(tasks)}] " + json.dumps(row), flush=True)
        save(out, results, entry)

    execute(tasks, args.jobs, args.data, overrides, args.runs, finished)
    write_markdown(load_saved(out), out)


def _known(dataset: str) -> str:
    if dataset not in DATASETS:
        raise SystemExit(f"unknown dataset {dataset!r}; known: {', '.join(DATASETS)}")
    return dataset


def execute(
    tasks: list[dict], jobs: int, data: Path, overrides: list[str], runs: Path, finished
) -> None:
    """Run every task, ``jobs`` at a time (the longest first, so the processes end
    together), calling ``finished(row)`` in this process as each ends."""
    if jobs == 1:
        for task in tasks:
            finished(run_task(task, data, overrides, runs, quiet=False))
        return
    order = sorted(
        tasks,
        key=lambda t: (
            -t["minutes"]
            * sum(t["members"] or [1])
            * len(t["input_lengths"] or [1])
            * (t["model"] in ("patch", "transformer"))
        ),
    )
    print(
        f"{len(tasks)} rows, {jobs} at a time; each one's output goes to {runs}/NAME.out",
        flush=True,
    )
    pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        pending = {pool.submit(run_task, task, data, overrides, runs, True) for task in order}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                finished(future.result())  # a failed row raises here and stops the rest
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_task(task: dict, data: Path, overrides: list[str], runs: Path, quiet: bool) -> dict:
    """One row (recording the plan's settings it ran with, if any); with ``quiet`` its
    training output goes to runs/NAME.out, not the terminal that the other processes
    share."""
    settings = task.get("settings") or []
    args = (
        data,
        task["dataset"],
        task["horizon"],
        task["model"],
        task["minutes"],
        [*settings, *overrides],
        task["input_lengths"],
        task["members"],
        runs,
    )
    noted = {"settings": settings} if settings else {}
    if not quiet:
        return {**run_one(*args), **noted}
    log = runs / f"{task['dataset']}_{task['model']}_{task['horizon']}.out"
    with (
        open(log, "a", encoding="utf-8") as stream,
        contextlib.redirect_stdout(stream),
        contextlib.redirect_stderr(stream),
    ):
        try:
            return {**run_one(*args), **noted}
        except BaseException as error:  # noqa: BLE001 - said here, then raised in the parent
            if not isinstance(error, SystemExit):  # a failed command has said why already
                traceback.print_exc(file=stream)
            raise SystemExit(
                f"{log.stem} failed ({type(error).__name__}: {error}); its output: {log}"
            ) from None


if __name__ == "__main__":
    main()
