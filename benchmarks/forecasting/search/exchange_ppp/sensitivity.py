"""After the rule's run, and deciding nothing: README.md's rule applied to half-lives of
three, four and five years, at 281 rows a year (LSTNet's 1990 to 2016) and at 365 (the
file's own calendar), one line each; then the last value and `ppp4y` on the protocol's
validation split, which the rule does not read. Writes nothing.

    python benchmarks/forecasting/search/exchange_ppp/sensitivity.py PATH/exchange_rate.csv
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "exchange_ar1"))
from ar1 import FOLDS, HORIZONS, split_data  # noqa: E402

from transduce.nn.forecasting.baselines import RepeatLast  # noqa: E402
from transduce.tasks.forecasting.evaluation import evaluate  # noqa: E402


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    csv, loaded = sys.argv[1], {}

    def mse(half_life: int, split: str, horizon: int, part: str = "test") -> float:
        if (split, horizon) not in loaded:
            loaded[split, horizon] = split_data(csv, split, horizon)
        return evaluate(RepeatLast(horizon, half_life), loaded[split, horizon], part)["mse"]

    for per_year in (7588 / 27, 365):
        for years in (3, 4, 5):
            half_life, chosen, test = round(years * per_year), [], []
            for h in HORIZONS:
                backtest = {hl: sum(mse(hl, s, h) for s in FOLDS.values()) / len(FOLDS)
                            for hl in (0, half_life)}
                pick = min(backtest, key=backtest.get)
                chosen.append("revert" if pick else "repeat")
                test.append(round(mse(pick, "auto", h), 4))
            print(f"{years} years at {per_year:.0f} rows a year (half_life={half_life}): "
                  f"chosen {', '.join(chosen)}; protocol test MSE {test}, mean "
                  f"{sum(test) / len(test):.4f}", flush=True)
    for h in HORIZONS:
        print(f"protocol validation at {h}: repeat {mse(0, 'auto', h, 'val'):.4f}, ppp4y "
              f"{mse(round(4 * 7588 / 27), 'auto', h, 'val'):.4f}", flush=True)


if __name__ == "__main__":
    main()
