"""exchange_rate: the last value pulled back towards the training mean at a four-year
half-life (Rogoff 1996), against the last value, chosen on the three backtests of
../backtest/ (the rule is in README.md). Writes choice.md and choice.json beside this file.

    python benchmarks/forecasting/search/exchange_ppp/ppp.py PATH/exchange_rate.csv
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "exchange_ar1"))
from ar1 import (AR1, FOLDS, HORIZONS, INPUT_LENGTH,  # noqa: E402
                 check_repeat, repeat_reference)

from transduce.forecasting.baselines import RepeatLast  # noqa: E402
from transduce.forecasting.config import ForecastConfig  # noqa: E402
from transduce.forecasting.data import load_forecast_data  # noqa: E402
from transduce.forecasting.evaluation import evaluate  # noqa: E402
from transduce.io import write_text  # noqa: E402

ROWS_PER_YEAR = 7588 / 27  # LSTNet: daily, 1990 to 2016
HALF_LIFE = round(4 * ROWS_PER_YEAR)  # rows; Rogoff's three to five years, the middle
MODELS = ("repeat", "ppp4y")


def scores(csv: str, split: str, horizon: int, models: tuple[str, ...]) -> dict:
    """Each of ``models``' MSE on ``split``'s test split (every window)."""
    data = load_forecast_data(ForecastConfig(csv=csv, model="repeat", quantiles=(),
                                             input_length=INPUT_LENGTH, horizon=horizon,
                                             split=split))
    channels = data.windows["train"].values.shape[1]
    phi = torch.full((channels,), 0.5 ** (1 / HALF_LIFE), dtype=torch.float64)
    built = {"repeat": RepeatLast(horizon), "ppp4y": AR1(phi, horizon)}
    return {m: evaluate(built[m], data, "test")["mse"] for m in models}


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    csv, began = sys.argv[1], time.time()
    lines = ["# exchange_rate: `ppp4y` against `repeat` on the three backtests", "",
             f"`ppp4y`: φ^k · (last value), φ = 0.5^(1/{HALF_LIFE}) (a four-year half-life "
             "at 281 rows a year). Backtest MSE on each fold's test split (every window, "
             "input 96); the lower mean of the folds is chosen (README.md). The protocol's "
             "test MSE is read only for the chosen candidate.", ""]
    reference = repeat_reference()
    choice = {}
    for h in HORIZONS:
        folds = {f: scores(csv, split, h, MODELS) for f, split in FOLDS.items()}
        for f, s in folds.items():
            check_repeat(reference, h, f, s["repeat"])
        mean = {m: sum(folds[f][m] for f in FOLDS) / len(FOLDS) for m in MODELS}
        chosen = min(mean, key=mean.get)
        protocol = scores(csv, "auto", h, (chosen,))
        choice[str(h)] = {"chosen": chosen, "backtest_mean": {m: round(v, 4)
                                                              for m, v in mean.items()},
                          "folds": {f: {m: round(folds[f][m], 4) for m in MODELS}
                                    for f in FOLDS},
                          "protocol_test_mse": round(protocol[chosen], 4)}
        lines += [f"## horizon {h}", "", "| candidate | f1 | f2 | f3 | backtest mean |",
                  "|---|---:|---:|---:|---:|"]
        for m in MODELS:
            mark = " (chosen)" if m == chosen else ""
            lines.append(f"| {m}{mark} | " + " | ".join(f"{folds[f][m]:.4f}" for f in FOLDS)
                         + f" | {mean[m]:.4f} |")
        lines += ["", f"Chosen: `{chosen}`; its protocol test MSE: "
                      f"{protocol[chosen]:.4f}.", ""]
        print(f"horizon {h}: {chosen} (backtest means: repeat {mean['repeat']:.4f}, "
              f"ppp4y {mean['ppp4y']:.4f}); protocol test MSE {protocol[chosen]:.4f}",
              flush=True)
    figure = sum(c["protocol_test_mse"] for c in choice.values()) / len(choice)
    lines += [f"Mean protocol test MSE of the choices: **{figure:.4f}** (the last value "
              "alone: 0.3410).", "",
              f"Command: `python benchmarks/forecasting/search/exchange_ppp/ppp.py "
              f"PATH/exchange_rate.csv` ({time.time() - began:.0f} s on this machine)."]
    write_text(HERE / "choice.md", "\n".join(lines) + "\n")
    write_text(HERE / "choice.json", json.dumps({"half_life_rows": HALF_LIFE,
                                                 "horizons": choice,
                                                 "mean_test_mse": round(figure, 4)},
                                                indent=1) + "\n")
    print(f"mean protocol test MSE of the choices: {figure:.4f}")


if __name__ == "__main__":
    main()
