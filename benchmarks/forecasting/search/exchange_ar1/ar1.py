"""exchange_rate: an AR(1) around the training mean against the last value, chosen on the
three backtests of ../backtest/ (the rule is in README.md). Writes choice.md and
choice.json beside this file.

    python benchmarks/forecasting/search/exchange_ar1/ar1.py PATH/exchange_rate.csv
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import torch
from torch import nn

from transduce.io import write_text
from transduce.nn.forecasting.baselines import RepeatLast
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.data import ForecastData, load_forecast_data
from transduce.tasks.forecasting.evaluation import evaluate

HERE = Path(__file__).parent
HORIZONS = (96, 192, 336, 720)
FOLDS = {"f1": "rows:3794,4554,6071", "f2": "rows:3034,3794,5311",
         "f3": "rows:2274,3034,4551"}  # ../backtest/README.md
INPUT_LENGTH = 96  # what `repeat` reads on exchange_rate


class AR1(nn.Module):
    """φ_c^k · (the window's last value): the last value pulled back towards 0, the
    training mean on the normalised scale. Returns (B, H, C, 1) as the baselines do."""

    def __init__(self, phi: torch.Tensor, horizon: int) -> None:
        super().__init__()
        steps = torch.arange(1, horizon + 1, dtype=phi.dtype)[:, None]  # (H, 1)
        self.register_buffer("decay", phi[None, :] ** steps)  # (H, C)

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        return (x[:, -1:].double() * self.decay).unsqueeze(-1), None  # (B, H, C, 1)


def yule_walker(data: ForecastData) -> torch.Tensor:
    """Each channel's lag-one autocorrelation over the training rows (around their mean,
    which the scaler fitted on them makes 0)."""
    start, end = data.borders["train"]
    x = data.windows["train"].values[start:end].double()  # (T, C), normalised
    return (x[:-1] * x[1:]).sum(0) / (x**2).sum(0)


def split_data(csv: str, split: str, horizon: int) -> ForecastData:
    """exchange_rate on ``split`` (a fold's rows, or "auto": the protocol's), input 96."""
    return load_forecast_data(ForecastConfig.of(csv=csv, model="repeat",
                                             input_length=INPUT_LENGTH, horizon=horizon,
                                             split=split))


def scores(csv: str, split: str, horizon: int, models: tuple[str, ...]) -> dict:
    """φ of ``split``'s training rows and each of ``models``' MSE on its test split."""
    data = split_data(csv, split, horizon)
    phi = yule_walker(data)
    built = {"repeat": RepeatLast(horizon), "ar1": AR1(phi, horizon)}
    return {"phi": [round(float(p), 6) for p in phi],
            **{m: evaluate(built[m], data, "test")["mse"] for m in models}}


def repeat_reference() -> dict:
    """../backtest/choice.md's `repeat` rows: horizon → fold → MSE."""
    reference = {}
    table = (HERE.parent / "backtest" / "choice.md").read_text()
    for h in HORIZONS:
        md = table.split(f"## horizon {h}\n")[1]
        row = next(r for r in md.splitlines() if r.startswith("| repeat"))
        reference[h] = dict(zip(FOLDS, map(float, row.split("|")[2:5])))
    return reference


def check_repeat(reference: dict, horizon: int, fold: str, mse: float) -> None:
    """Stop unless `repeat` scores here what ../backtest/choice.md has."""
    if abs(mse - reference[horizon][fold]) > 5e-5:
        raise SystemExit(f"repeat on {fold} at {horizon}: {mse:.4f}, but "
                         f"../backtest/choice.md has {reference[horizon][fold]:.4f}")


def candidate_rows(folds: dict, mean: dict, chosen: str) -> list[str]:
    """choice.md's table at one horizon: each candidate's MSE on each fold (``folds``:
    fold → candidate → MSE) and their mean, the chosen one marked."""
    lines = ["| candidate | f1 | f2 | f3 | backtest mean |", "|---|---:|---:|---:|---:|"]
    for m in mean:
        mark = " (chosen)" if m == chosen else ""
        lines.append(f"| {m}{mark} | " + " | ".join(f"{folds[f][m]:.4f}" for f in FOLDS)
                     + f" | {mean[m]:.4f} |")
    return lines


def choose_at(csv: str, horizon: int, models: tuple[str, ...], scores, reference: dict,
              lines: list[str]) -> tuple[dict, dict, dict]:
    """The rule at one horizon: ``scores(csv, split, horizon, models)`` (each model's MSE
    on the split's test rows, by name) on every fold, `repeat`'s checked against
    ``reference``, the lowest mean over the folds chosen and only it scored on the
    protocol's split. Adds the horizon's table to ``lines`` and prints a line. Returns the
    choice's record, the folds' scores and the protocol's."""
    folds = {f: scores(csv, split, horizon, models) for f, split in FOLDS.items()}
    for f, s in folds.items():
        check_repeat(reference, horizon, f, s["repeat"])
    mean = {m: sum(folds[f][m] for f in FOLDS) / len(FOLDS) for m in models}
    chosen = min(mean, key=mean.get)
    protocol = scores(csv, "auto", horizon, (chosen,))
    record = {"chosen": chosen, "backtest_mean": {m: round(v, 4) for m, v in mean.items()},
              "folds": {f: {m: round(folds[f][m], 4) for m in models} for f in FOLDS},
              "protocol_test_mse": round(protocol[chosen], 4)}
    lines += [f"## horizon {horizon}", "", *candidate_rows(folds, mean, chosen), "",
              f"Chosen: `{chosen}`; its protocol test MSE: {protocol[chosen]:.4f}.", ""]
    print(f"horizon {horizon}: {chosen} (backtest means: "
          + ", ".join(f"{m} {v:.4f}" for m, v in mean.items())
          + f"); protocol test MSE {protocol[chosen]:.4f}", flush=True)
    return record, folds, protocol


def finish(script: str, lines: list[str], record: dict, began: float) -> None:
    """Add the figure (the mean of ``record["horizons"]``' protocol test MSE) and the
    command to ``lines``; write them as choice.md, and ``record`` with the figure as
    choice.json, beside ``script``; print the figure."""
    here, choice = Path(script).parent, record["horizons"]
    figure = sum(c["protocol_test_mse"] for c in choice.values()) / len(choice)
    lines += [f"Mean protocol test MSE of the choices: **{figure:.4f}** (the last value "
              "alone: 0.3410).", "",
              f"Command: `python benchmarks/forecasting/search/{here.name}/"
              f"{Path(script).name} PATH/exchange_rate.csv` ({time.time() - began:.0f} s on "
              "this machine)."]
    write_text(here / "choice.md", "\n".join(lines) + "\n")
    write_text(here / "choice.json", json.dumps({**record, "mean_test_mse": round(figure, 4)},
                                                indent=1) + "\n")
    print(f"mean protocol test MSE of the choices: {figure:.4f}")


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    csv, began = sys.argv[1], time.time()
    lines = ["# exchange_rate: `ar1` against `repeat` on the three backtests", "",
             "Backtest MSE on each fold's test split (every window, input 96); the lower "
             "mean of the folds is chosen (README.md). The protocol's test MSE is read only "
             "for the chosen candidate.", ""]
    reference = repeat_reference()
    choice, phis = {}, {}
    for h in HORIZONS:
        choice[str(h)], folds, protocol = choose_at(csv, h, ("repeat", "ar1"), scores,
                                                    reference, lines)
        phis.update({f: folds[f]["phi"] for f in FOLDS}, protocol=protocol["phi"])
    lines += ["φ per currency, fitted on each split's training rows (half-life in days: "
              "ln 0.5 / ln φ):", "", "| split | " + " | ".join(
                  f"c{i}" for i in range(len(phis["protocol"]))) + " |",
              "|---|" + "---:|" * len(phis["protocol"])]
    for split, phi in phis.items():
        lines.append(f"| {split} | " + " | ".join(
            f"{p:.5f} ({math.log(0.5) / math.log(p):.0f})"
            for p in phi) + " |")
    finish(__file__, lines + [""], {"horizons": choice, "phi": phis}, began)


if __name__ == "__main__":
    main()
