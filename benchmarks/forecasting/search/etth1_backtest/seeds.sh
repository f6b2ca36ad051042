#!/usr/bin/env bash
# ETTh1's backtest choice again with seeds 1 and 2: at 192, 336 and 720 the chosen candidate
# and its runner-up on both folds (README.md, "More seeds"), then choose_seeds.py.
# From the repository root:
#   bash benchmarks/forecasting/search/etth1_backtest/seeds.sh DATA_DIR
set -euo pipefail
data=${1:?usage: seeds.sh DATA_DIR (the folder holding ETTh1.csv)}
py=${PYTHON:-.venv/bin/python}
here=benchmarks/forecasting/search/etth1_backtest
source "$here/folds.sh"
fold() {  # FOLD ROWS
    family "$1" "$2" 1; family "$1" "$2" 2; blend_at 192 "$1" "$2" 1; blend_at 192 "$1" "$2" 2
}
both_folds "seeds_"
$py "$here/choose_seeds.py"
