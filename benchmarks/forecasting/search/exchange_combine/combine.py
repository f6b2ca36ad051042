"""exchange_rate: equal-weight combinations with the last value, chosen with the eleven
candidates of ../backtest/ on its three backtests (the rule is in README.md). Blends the
runs ../backtest/run.sh trained (`transduce forecast blend --equal`, about 2 s each) into
runs/bench/exchange_combine/, and writes choice.md and choice.json beside this file.

    python benchmarks/forecasting/search/exchange_combine/combine.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
BENCH = HERE.parents[1]
sys.path[:0] = [str(BENCH), str(HERE.parent / "backtest")]
from blend import row_run  # noqa: E402
from choose import (FIGURE, FOLDS, HORIZONS, PLAN, VARIANTS, horizon_table, rows,  # noqa: E402
                    scores)

from transduce.cli.main import main as transduce  # noqa: E402
from transduce.io import write_text  # noqa: E402
from transduce.runs import BLEND as BLEND_FILE  # noqa: E402

BACKTEST = HERE.parent / "backtest"
RUNS = Path("runs/bench/backtest")  # where ../backtest/run.sh trained
OUT = Path("runs/bench/exchange_combine")
SINGLES = [m for m in PLAN if m != "repeat"] + list(VARIANTS)  # the nine trained ones
COMBINATIONS = {**{f"repeat+{m}": ["repeat", m] for m in SINGLES},
                "mean_all": ["repeat", *SINGLES]}


def run_dirs(split: str) -> dict[tuple[str, int], Path]:
    """(single candidate, horizon) → the run behind its row on ``split`` (a fold, or
    "protocol", whose plan rows are those of exchange_rate's earlier figure)."""
    plan_rows = FIGURE if split == "protocol" else BACKTEST / split / "plan"
    found = {(r["model"], r["horizon"]): row_run(r, RUNS / split / "plan")
             for r in rows(plan_rows / "results.json") if r["model"] in PLAN}
    for variant, model in VARIANTS.items():
        found.update({(variant, r["horizon"]): row_run(r, RUNS / split / variant)
                      for r in rows(BACKTEST / split / variant / "results.json")
                      if r["model"] == model})
    return found


def combine(split: str) -> dict[tuple[str, int], tuple[float, float]]:
    """(combination, horizon) → (validation MSE, test MSE) of its equal-weight blend on
    ``split``."""
    dirs, out = run_dirs(split), {}
    for name, members in COMBINATIONS.items():
        for h in HORIZONS:
            folder = OUT / split / f"{name}_{h}"
            runs = [str(dirs[m, h]) for m in members]
            if transduce(["forecast", "blend", "--equal", "--out", str(folder), *runs]) != 0:
                raise SystemExit(f"blending {name} at {h} on {split} failed")
            record = json.loads((folder / BLEND_FILE).read_text())
            out[name, h] = (record["val_mse"], record["test"]["mse"])
    return out


def main() -> None:
    began = time.time()
    folds = {f: {**scores(BACKTEST / f / "plan", BACKTEST / f), **combine(f)} for f in FOLDS}
    protocol = {**scores(FIGURE, BACKTEST / "protocol"), **combine("protocol")}
    candidates = [*PLAN, "blend", *VARIANTS, *COMBINATIONS]
    lines = ["# exchange_rate: equal-weight combinations against the eleven candidates", "",
             "Backtest MSE: each fold's test split (rows before the protocol's test split). "
             "The choice is the lowest mean over the three folds (README.md); the protocol's "
             "validation choice is shown beside it. Test MSE is "
             "the protocol's test split, read for the figure only. The first eleven rows "
             "are ../backtest/choice.md's.", ""]
    choice = {}
    for h in HORIZONS:
        table, chosen, _ = horizon_table(folds, protocol, candidates, h)
        lines += table
        mean = sum(folds[f][chosen, h][1] for f in FOLDS) / len(FOLDS)
        choice[h] = {"backtest": chosen, "backtest_mean": round(mean, 4),
                     "test_mse": protocol[chosen, h][1]}
    figure = sum(c["test_mse"] for c in choice.values()) / len(choice)
    lines += [f"Mean test MSE of the backtests' choices: **{figure:.4f}** "
              f"({time.time() - began:.0f} s).", ""]
    write_text(HERE / "choice.md", "\n".join(lines))
    write_text(HERE / "choice.json", json.dumps({"horizons": choice, "mean_test_mse": figure},
                                                indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
