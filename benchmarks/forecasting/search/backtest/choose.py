"""exchange_rate's model, horizon by horizon, chosen on three backtests (README.md): reads
the rows run.sh wrote, writes choice.md and choice.json beside this file.

    python benchmarks/forecasting/search/backtest/choose.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
from transduce.io import write_text

FOLDS = ["f1", "f2", "f3"]
PLAN = ["patch", "channel", "transformer", "linear", "sparse", "repeat"]
VARIANTS = {"patch_mse": "patch", "sparse_nomap": "sparse", "linear_norevin": "linear",
            "dlinear": "linear"}
BLEND = "blend_patch+channel+linear+transformer+repeat+sparse.json"
# The protocol split's rows of the plan and of their blend: exchange_rate's figure until now.
FIGURE = HERE.parent / "revin_affine" / "exchange" / "blend"
HORIZONS = [96, 192, 336, 720]


def rows(path: Path) -> list[dict]:
    return [r for r in json.loads(path.read_text())["results"]
            if r["dataset"] == "exchange_rate"]


def scores(plan: Path, variants: Path) -> dict[tuple[str, int], tuple[float, float]]:
    """(candidate, horizon) → (validation MSE, test MSE) on one split."""
    out = {(r["model"], r["horizon"]): (r["val_mse"], r["mse"]) for r in rows(plan / "results.json")
           if r["model"] in PLAN}
    out.update({("blend", r["horizon"]): (r["val_mse"], r["mse"]) for r in rows(plan / BLEND)})
    for variant, model in VARIANTS.items():
        out.update({(variant, r["horizon"]): (r["val_mse"], r["mse"])
                    for r in rows(variants / variant / "results.json") if r["model"] == model})
    return out


def horizon_table(folds: dict, protocol: dict, candidates: list[str], h: int
                  ) -> tuple[list[str], str, str]:
    """Horizon ``h``'s section of choice.md: each candidate's MSE on the folds' test splits,
    their mean, and its validation and test MSE on the protocol's split (``folds``: fold →
    ``scores``; ``protocol``: ``scores`` of the protocol's split). Returns its lines, the
    candidate of the lowest backtest mean and that of the lowest protocol validation MSE."""
    lines = [f"## horizon {h}", "",
             "| candidate | f1 | f2 | f3 | backtest mean | protocol val | protocol test |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    mean = {c: sum(folds[f][c, h][1] for f in FOLDS) / len(FOLDS) for c in candidates}
    by_backtest = min(candidates, key=mean.__getitem__)
    by_val = min(candidates, key=lambda c: protocol[c, h][0])
    for c in candidates:
        mark = (" (backtest's choice)" if c == by_backtest else "") + \
            (" (validation's choice)" if c == by_val else "")
        lines.append(f"| {c}{mark} | " + " | ".join(f"{folds[f][c, h][1]:.4f}" for f in FOLDS)
                     + f" | {mean[c]:.4f} | {protocol[c, h][0]:.4f} | {protocol[c, h][1]:.4f} |")
    return lines + [""], by_backtest, by_val


def main() -> None:
    folds = {f: scores(HERE / f / "plan", HERE / f) for f in FOLDS}
    protocol = scores(FIGURE, HERE / "protocol")
    candidates = PLAN + ["blend"] + list(VARIANTS)
    lines = ["# exchange_rate: the backtests' choice", "",
             "Backtest MSE: each fold's test split (rows before the protocol's test split). "
             "The choice is the lowest mean over the three folds; the protocol's validation "
             "choice is shown beside it. Test MSE is the protocol's test split, read for "
             "the figure only.", ""]
    choice = {}
    for h in HORIZONS:
        table, by_backtest, by_val = horizon_table(folds, protocol, candidates, h)
        lines += table
        choice[h] = {"backtest": by_backtest, "backtest_test_mse": protocol[by_backtest, h][1],
                     "validation": by_val, "validation_test_mse": protocol[by_val, h][1]}
    figure = sum(c["backtest_test_mse"] for c in choice.values()) / len(choice)
    by_val = sum(c["validation_test_mse"] for c in choice.values()) / len(choice)
    lines += [f"Mean test MSE of the backtests' choices: **{figure:.4f}**; of validation's "
              f"choices among the same candidates: {by_val:.4f}.", ""]
    write_text(HERE / "choice.md", "\n".join(lines))
    write_text(HERE / "choice.json", json.dumps({"horizons": choice, "mean_test_mse": figure,
                                                 "validation_mean_test_mse": by_val}, indent=1)
               + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
