"""ETTh1's model, horizon by horizon, chosen on its two backtest folds (README.md, the rule):
reads the rows choose.sh wrote, scores each chosen candidate on the protocol's test split as
the figure is scored (the equal mean of seeds 2021, 1 and 2), and writes choice.md and
choice.json beside this file.

    python benchmarks/forecasting/search/etth1_backtest/choose.py
"""

from __future__ import annotations

import json
from pathlib import Path

from transduce.io import write_text
from transduce.tasks.forecasting.blend import blend_runs

HERE = Path(__file__).parent
ROOT = HERE.parents[3]
FOLDS = ["f1", "f2"]
PLAN = ["patch", "channel", "linear", "sparse"]
VARIANTS = {"sparse_nomap_in512": 512, "sparse_nomap_in720": 720}
BLEND = "blend_patch+linear+channel+sparse.json"
SEEDS = ["2021", "1", "2"]
# ETTh1's figure until now: the bag of three seeds' blends, and those seeds' rows
FIGURE = HERE.parent / "patch_revin_affine"
HORIZONS = [96, 192, 336, 720]


def rows(path: Path) -> list[dict]:
    return [r for r in json.loads(path.read_text())["results"] if r["dataset"] == "ETTh1"]


def fold_scores(fold: Path) -> dict[tuple[str, int], float]:
    """(candidate, horizon) → test MSE on one backtest fold."""
    out = {(r["model"], r["horizon"]): r["mse"] for r in rows(fold / "plan" / "results.json")}
    out.update({("blend", r["horizon"]): r["mse"] for r in rows(fold / "plan" / BLEND)})
    for variant in VARIANTS:
        out.update({(variant, r["horizon"]): r["mse"]
                    for r in rows(fold / variant / "results.json")})
    return out


def protocol_runs(candidate: str, horizon: int) -> list[str]:
    """The protocol split's runs of ``candidate`` at ``horizon`` from seeds 2021, 1 and 2."""
    if candidate in VARIANTS:
        return [f"runs/bench/ra_s{s}/ETTh1_sparse_{horizon}_in{VARIANTS[candidate]}"
                for s in SEEDS]
    return [r["run"] for s in SEEDS for r in rows(FIGURE / "bag" / f"seed_{s}" / "results.json")
            if r["model"] == candidate and r["horizon"] == horizon]


def protocol_test(candidate: str, horizon: int) -> float:
    """Step 4 of the rule: the chosen candidate's test MSE on the protocol's split."""
    if candidate == "blend":
        return {r["horizon"]: r["mse"] for r in
                rows(FIGURE / "bag_patch+linear+channel+sparse.json")}[horizon]
    runs = protocol_runs(candidate, horizon)
    assert len(runs) == len(SEEDS), (candidate, horizon, runs)
    out = ROOT / "runs" / "bench" / "etth1_bt" / "protocol" / f"{candidate}_{horizon}"
    return blend_runs([str(ROOT / r) for r in runs], out, equal=True)["test"]["mse"]


def main() -> None:
    folds = {f: fold_scores(HERE / f) for f in FOLDS}
    candidates = PLAN + ["blend"] + list(VARIANTS)
    lines = ["# ETTh1: the backtests' choice", "",
             "Backtest MSE: the test split of each of ETTh1's two backtest folds (rows before "
             "the protocol's test split), seed 2021. The choice is the lowest mean over the "
             "folds. Its protocol test MSE is the equal mean of its runs from seeds 2021, 1 "
             "and 2 (for the blend: the bag, ETTh1's figure until now), read only for the "
             "chosen candidate.", ""]
    choice = {}
    for h in HORIZONS:
        lines += [f"## horizon {h}", "", "| candidate | f1 | f2 | backtest mean |",
                  "|---|---:|---:|---:|"]
        mean = {c: sum(folds[f][c, h] for f in FOLDS) / len(FOLDS) for c in candidates}
        chosen = min(candidates, key=mean.__getitem__)
        for c in sorted(candidates, key=mean.__getitem__):
            mark = " (chosen)" if c == chosen else ""
            lines.append(f"| {c}{mark} | " + " | ".join(f"{folds[f][c, h]:.4f}" for f in FOLDS)
                         + f" | {mean[c]:.4f} |")
        test = protocol_test(chosen, h)
        choice[h] = {"chosen": chosen, "backtest_mse": round(mean[chosen], 4),
                     "protocol_test_mse": round(test, 4)}
        lines += ["", f"Chosen: `{chosen}`; its protocol test MSE (three seeds): {test:.4f}.", ""]
    figure = sum(c["protocol_test_mse"] for c in choice.values()) / len(choice)
    lines += [f"Mean protocol test MSE of the backtests' choices: **{figure:.4f}** "
              "(the figure until now, the bag chosen on validation: 0.4127).", ""]
    write_text(HERE / "choice.md", "\n".join(lines))
    write_text(HERE / "choice.json", json.dumps({"horizons": choice, "mean_test_mse": figure},
                                                indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
