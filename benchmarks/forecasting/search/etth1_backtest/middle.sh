#!/usr/bin/env bash
# ETTh1's backtest choice with a third fold between the two (README.md, "A third fold"):
# the candidates of seeds.sh on rows 4320,7200,10080, seeds 2021, 1 and 2, in two processes
# of one thread, then choose_seeds.py --middle. From the repository root:
#   bash benchmarks/forecasting/search/etth1_backtest/middle.sh DATA_DIR
set -euo pipefail
data=${1:?usage: middle.sh DATA_DIR (the folder holding ETTh1.csv)}
py=${PYTHON:-.venv/bin/python}
here=benchmarks/forecasting/search/etth1_backtest
source "$here/folds.sh"
rows=4320,7200,10080  # forecast backtest --folds 3 --step 1440: the fold between f1 and f2
mkdir -p runs/bench/etth1_bt
{ for s in 2021 1 2; do family fm $rows $s; done; blend_at 192 fm $rows 2021; } \
    > runs/bench/etth1_bt/middle_a.log 2>&1 &
one=$!
{ blend_at 192 fm $rows 1; blend_at 192 fm $rows 2; } > runs/bench/etth1_bt/middle_b.log 2>&1 &
two=$!
wait $one; wait $two
$py "$here/choose_seeds.py" --middle
