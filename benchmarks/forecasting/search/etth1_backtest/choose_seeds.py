"""ETTh1's backtest choice at 192, 336 and 720 with seeds 2021, 1 and 2 on each fold
(README.md, "More seeds" and "A third fold"): scores each of the two candidates on each fold
as the figure is scored (the equal mean of the three seeds' runs), chooses the lower mean of
the folds, reads the protocol's test split only for the chosen one, and writes
choice_seeds.md and .json (folds f1 and f2), or with --middle choice_middle.md and .json
(f1, the middle fold fm and f2), beside this file. With --horizon 96, horizon 96 alone on
the three folds (README.md, "Horizon 96 with more seeds and the third fold"), the other
horizons taken from choice_middle.json: choice_96.md and .json.

    python benchmarks/forecasting/search/etth1_backtest/choose_seeds.py [--middle | --horizon 96]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))
from blend import blend_dir  # noqa: E402
from choose import FOLDS, ROOT, SEEDS, protocol_test, rows  # noqa: E402

from transduce.io import write_text  # noqa: E402
from transduce.tasks.forecasting.blend import blend_runs  # noqa: E402
from transduce.runs import BLEND as BLEND_FILE

BLEND_MODELS = ["patch", "linear", "channel", "sparse"]
PAIRS = {96: ["blend", "sparse"], 192: ["sparse_nomap_in512", "blend"],
         336: ["sparse_nomap_in512", "sparse"], 720: ["sparse_nomap_in512", "sparse_nomap_in720"]}
BAGS = ROOT / "runs" / "bench" / "etth1_bt" / "seeds_bag"


def member(candidate: str, horizon: int, fold: str, seed: str) -> Path:
    """One seed's run (or, for the blend, blend folder) of ``candidate`` on ``fold``."""
    first = seed == SEEDS[0] and fold in FOLDS  # trained by choose.sh
    if candidate == "blend":
        runs = ROOT / "runs" / "bench" / ("etth1_bt" if first else f"etth1_bt_s{seed}") / fold
        found = blend_dir(runs / "plan", "ETTh1", BLEND_MODELS, horizon)
        if not (found / BLEND_FILE).is_file():
            raise SystemExit(f"{found}: no blend there; run seeds.sh (fm: middle.sh; at 96: "
                             "h96.sh) first")
        return found
    # choose.sh (seed 2021 on f1 and f2: HERE/FOLD) and blend_at (HERE/seeds/sS/FOLD) put
    # the plan's rows in plan/; family() put the plan's `sparse` at 336 in plan_sparse/
    if candidate != "sparse":
        where = candidate  # sparse_nomap_inN
    elif horizon == 336 and not first:
        where = "plan_sparse"
    else:
        where = "plan"
    folder = (HERE / fold if first else HERE / "seeds" / f"s{seed}" / fold) / where
    found = [r["run"] for r in rows(folder / "results.json")
             if r["model"] == "sparse" and r["horizon"] == horizon]
    if len(found) != 1:
        raise SystemExit(f"{folder}: {len(found)} rows of {candidate} at {horizon}")
    return ROOT / found[0]


def fold_score(candidate: str, horizon: int, fold: str) -> float:
    """The fold's test MSE of the equal mean of the three seeds' forecasts."""
    members = [member(candidate, horizon, fold, s) for s in SEEDS]
    out = BAGS / f"{fold}_{candidate}_{horizon}"
    return blend_runs([str(m) for m in members], out, equal=True)["test"]["mse"]


def listed(horizons) -> str:
    """"96", "96 and 192", "192, 336 and 720"."""
    *rest, last = map(str, horizons)
    return f"{', '.join(rest)} and {last}" if rest else last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--middle", action="store_true",
                       help="also the middle fold, fm (middle.sh)")
    which.add_argument("--horizon", type=int, choices=[96],
                       help="only this horizon, on f1, fm and f2 (h96.sh)")
    args = parser.parse_args()
    folds = [FOLDS[0], "fm", FOLDS[1]] if args.middle or args.horizon else FOLDS
    before = json.loads((HERE / "choice.json").read_text())["horizons"]
    if args.horizon:
        name, choice = f"choice_{args.horizon}", json.loads(
            (HERE / "choice_middle.json").read_text())["horizons"]
        horizons = [args.horizon]
        kept = f"{listed(h for h in PAIRS if h != args.horizon)} keep the choices of " \
            "`choice_middle.json`."
    else:
        name = "choice_middle" if args.middle else "choice_seeds"
        choice, horizons = {"96": before["96"]}, [192, 336, 720]
        kept = "96 keeps the bag (not run again)."
    lines = [f"# ETTh1: the backtests' choice with three seeds per fold, {len(folds)} folds", "",
             f"At {listed(horizons)}, the choice and runner-up of `choice.md` (seed 2021), each "
             "scored on each fold as the figure is: the test MSE of the equal mean of its "
             "runs from seeds 2021, 1 and 2 (for the blend: of the three seeds' blends). "
             f"The choice is the lower mean of the {len(folds)} folds "
             f"({', '.join(folds)}). The protocol's test split is read only for the chosen "
             f"candidate. {kept}", ""]
    for h in horizons:
        pair = PAIRS[h]
        scores = {c: {f: fold_score(c, h, f) for f in folds} for c in pair}
        mean = {c: sum(scores[c][f] for f in folds) / len(folds) for c in pair}
        chosen = min(pair, key=mean.__getitem__)
        lines += [f"## horizon {h}", "",
                  "| candidate | " + " | ".join(f"{f}, three seeds" for f in folds) +
                  " | mean of the folds | rank with seed 2021 on f1 and f2 (`choice.md`) |",
                  "|---|" + "---:|" * (len(folds) + 2)]
        for c in sorted(pair, key=mean.__getitem__):
            mark = " (chosen)" if c == chosen else ""
            lines.append(f"| {c}{mark} | " +
                         " | ".join(f"{scores[c][f]:.4f}" for f in folds) +
                         f" | {mean[c]:.4f} | " +
                         ("chosen" if before[str(h)]["chosen"] == c else "runner-up") + " |")
        test = protocol_test(chosen, h)
        choice[str(h)] = {"chosen": chosen, "backtest_mse": round(mean[chosen], 4),
                          "protocol_test_mse": round(test, 4),
                          "fold_mse": {c: {f: round(scores[c][f], 4) for f in folds}
                                       for c in pair}}
        lines += ["", f"Chosen: `{chosen}`; its protocol test MSE (three seeds): {test:.4f}.",
                  ""]
    choice = {str(h): choice[str(h)] for h in PAIRS}  # in the order of the horizons
    figure = sum(c["protocol_test_mse"] for c in choice.values()) / len(choice)
    lines += [f"Mean protocol test MSE of these choices: **{figure:.4f}** (with one seed per "
              "fold on f1 and f2: 0.3950).", ""]
    write_text(HERE / f"{name}.md", "\n".join(lines))
    write_text(HERE / f"{name}.json", json.dumps({"folds": folds, "horizons": choice,
                                                  "mean_test_mse": figure}, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
