#!/usr/bin/env bash
# ETTh1's backtest choice at horizon 96 with seeds 2021, 1 and 2 on f1, fm and f2 (README.md,
# "Horizon 96 with more seeds and the third fold"): the plan's four models at 96 and their
# blend on each fold and seed not trained yet, in two processes of one thread, then
# choose_seeds.py --horizon 96. From the repository root:
#   bash benchmarks/forecasting/search/etth1_backtest/h96.sh DATA_DIR
set -euo pipefail
data=${1:?usage: h96.sh DATA_DIR (the folder holding ETTh1.csv)}
py=${PYTHON:-.venv/bin/python}
here=benchmarks/forecasting/search/etth1_backtest
source "$here/folds.sh"
f1=5760,8640,11520 fm=4320,7200,10080 f2=2880,5760,8640  # seed 2021 on f1, f2: choose.sh
mkdir -p runs/bench/etth1_bt
{ blend_at 96 f1 $f1 1; blend_at 96 f1 $f1 2; blend_at 96 fm $fm 2021; } \
    > runs/bench/etth1_bt/h96_a.log 2>&1 &
one=$!
{ blend_at 96 f2 $f2 1; blend_at 96 f2 $f2 2; blend_at 96 fm $fm 1; blend_at 96 fm $fm 2; } \
    > runs/bench/etth1_bt/h96_b.log 2>&1 &
two=$!
wait $one; wait $two
$py "$here/choose_seeds.py" --horizon 96
