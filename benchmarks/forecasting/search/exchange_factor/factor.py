"""exchange_rate: forecasts from each currency's gap to its common factors (Engel, Mark and
West) against the last value, chosen on the three backtests of ../backtest/ (the rule is in
README.md). Writes choice.md and choice.json beside this file.

    python benchmarks/forecasting/search/exchange_factor/factor.py PATH/exchange_rate.csv
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE.parent / "exchange_ar1")]
from ar1 import FOLDS, HORIZONS, check_repeat, finish, repeat_reference, split_data  # noqa: E402

from transduce.nn.forecasting.baselines import RepeatLast  # noqa: E402
from transduce.tasks.forecasting.data import ForecastData  # noqa: E402
from transduce.tasks.forecasting.evaluation import evaluate  # noqa: E402

FACTORS = (1, 2, 3)
CANDIDATES = ("repeat",) + tuple(f"factor_{k}" for k in FACTORS)


class FactorGap(nn.Module):
    """x + β_s · g for s = 1 … H, where x is the window's last value and g = (ΛΛᵀ − I) x its
    gap to the k common factors. Returns (B, H, C, 1) as the baselines do."""

    def __init__(self, to_gap: torch.Tensor, beta: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("to_gap", to_gap)  # (C, C), symmetric
        self.register_buffer("beta", beta)  # (H,)

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        last = x[:, -1].double()  # (B, C)
        gap = last @ self.to_gap  # (B, C)
        y = last[:, None] + self.beta[None, :, None] * gap[:, None]  # (B, H, C)
        return y.unsqueeze(-1), None


def fit(data: ForecastData, k: int, horizon: int) -> tuple[FactorGap, dict]:
    """Λ from the training rows' covariance, and β_s by pooled least squares on them."""
    start, end = data.borders["train"]
    x = data.windows["train"].values[start:end].double()  # (T, C), normalised
    values, vectors = torch.linalg.eigh(x.T @ x / len(x))  # ascending
    loadings = vectors[:, -k:]  # (C, k)
    to_gap = loadings @ loadings.T - torch.eye(x.shape[1], dtype=x.dtype)
    gap = x @ to_gap  # (T, C)
    beta = torch.stack([(gap[:-s] * (x[s:] - x[:-s])).sum() / (gap[:-s] ** 2).sum()
                        for s in range(1, horizon + 1)])
    fitted = {"explained": round(float(values[-k:].sum() / values.sum()), 4),
              "beta": {s: round(float(beta[s - 1]), 4) for s in (1, 96, horizon)}}
    return FactorGap(to_gap, beta), fitted


def scores(csv: str, split: str, horizon: int, models: tuple[str, ...]) -> dict:
    """Each of ``models``' MSE on ``split``'s test split, fitted on its training rows, and
    what each factor model fitted."""
    data = split_data(csv, split, horizon)
    out, fitted = {}, {}
    for m in models:
        if m == "repeat":
            model = RepeatLast(horizon)
        else:
            model, fitted[m] = fit(data, int(m.split("_")[1]), horizon)
        out[m] = evaluate(model, data, "test")["mse"]
    return {"mse": out, "fitted": fitted}


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    csv, began = sys.argv[1], time.time()
    lines = ["# exchange_rate: `factor_k` against `repeat` on the three backtests", "",
             "Backtest MSE on each fold's test split (every window, input 96); the lowest "
             "mean of the folds is chosen (README.md). The protocol's test MSE is read only "
             "for the chosen candidate.", ""]
    reference, choice = repeat_reference(), {}
    for h in HORIZONS:
        folds = {f: scores(csv, split, h, CANDIDATES) for f, split in FOLDS.items()}
        for f, s in folds.items():
            check_repeat(reference, h, f, s["mse"]["repeat"])
        mean = {m: sum(folds[f]["mse"][m] for f in FOLDS) / len(FOLDS) for m in CANDIDATES}
        chosen = min(mean, key=mean.get)
        protocol = scores(csv, "auto", h, (chosen,))
        choice[str(h)] = {
            "chosen": chosen, "backtest_mean": {m: round(v, 4) for m, v in mean.items()},
            "folds": {f: {m: round(folds[f]["mse"][m], 4) for m in CANDIDATES}
                      for f in FOLDS},
            "fitted": {f: folds[f]["fitted"] for f in FOLDS},
            "protocol_test_mse": round(protocol["mse"][chosen], 4)}
        lines += [f"## horizon {h}", "", "| candidate | f1 | f2 | f3 | backtest mean | "
                  "explained variance, β at steps 1, 96 and the horizon (f1 / f2 / f3) |",
                  "|---|---:|---:|---:|---:|---|"]
        for m in CANDIDATES:
            fitted = " / ".join(
                f"{folds[f]['fitted'][m]['explained']:.2f}: "
                + ", ".join(f"{b:.3f}" for b in folds[f]["fitted"][m]["beta"].values())
                for f in FOLDS) if m != "repeat" else "–"
            mark = " (chosen)" if m == chosen else ""
            lines.append(f"| {m}{mark} | " + " | ".join(f"{folds[f]['mse'][m]:.4f}"
                                                        for f in FOLDS)
                         + f" | {mean[m]:.4f} | {fitted} |")
        lines += ["", f"Chosen: `{chosen}`; its protocol test MSE: "
                      f"{protocol['mse'][chosen]:.4f}.", ""]
        print(f"horizon {h}: {chosen} (backtest means: "
              + ", ".join(f"{m} {v:.4f}" for m, v in mean.items())
              + f"); protocol test MSE {protocol['mse'][chosen]:.4f}", flush=True)
    finish(__file__, lines, {"horizons": choice}, began)

if __name__ == "__main__":
    main()
