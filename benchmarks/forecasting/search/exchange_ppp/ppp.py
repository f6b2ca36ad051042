"""exchange_rate: the last value pulled back towards the training mean at a four-year
half-life (Rogoff 1996), against the last value, chosen on the three backtests of
../backtest/ (the rule is in README.md). Writes choice.md and choice.json beside this file.

    python benchmarks/forecasting/search/exchange_ppp/ppp.py PATH/exchange_rate.csv
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "exchange_ar1"))
from ar1 import HORIZONS, choose_at, finish, repeat_reference, split_data  # noqa: E402

from transduce.nn.forecasting.baselines import RepeatLast  # noqa: E402
from transduce.tasks.forecasting.evaluation import evaluate  # noqa: E402

ROWS_PER_YEAR = 7588 / 27  # LSTNet: daily, 1990 to 2016
HALF_LIFE = round(4 * ROWS_PER_YEAR)  # rows; Rogoff's three to five years, the middle
MODELS = ("repeat", "ppp4y")


def scores(csv: str, split: str, horizon: int, models: tuple[str, ...]) -> dict:
    """Each of ``models``' MSE on ``split``'s test split (every window)."""
    data = split_data(csv, split, horizon)
    built = {"repeat": RepeatLast(horizon), "ppp4y": RepeatLast(horizon, HALF_LIFE)}
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
    reference, choice = repeat_reference(), {}
    for h in HORIZONS:
        choice[str(h)] = choose_at(csv, h, MODELS, scores, reference, lines)[0]
    finish(__file__, lines, {"half_life_rows": HALF_LIFE, "horizons": choice}, began)


if __name__ == "__main__":
    main()
