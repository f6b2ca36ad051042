#!/usr/bin/env bash
# ETTh1's candidates on its two backtest folds, side by side, then the choice (README.md).
# From the repository root:
#   bash benchmarks/forecasting/search/etth1_backtest/choose.sh DATA_DIR
set -euo pipefail
data=${1:?usage: choose.sh DATA_DIR (the folder holding ETTh1.csv)}
py=${PYTHON:-.venv/bin/python}
here=benchmarks/forecasting/search/etth1_backtest
source "$here/folds.sh"  # both_folds
fold() {  # NAME ROWS: the plan's four models, their blend, sparse without the map
    local name=$1 split=split=rows:$2 runs=runs/bench/etth1_bt/$1
    $py benchmarks/forecasting/run.py --data "$data" --plan benchmarks/forecasting/plan.yaml \
        --datasets ETTh1 --models patch,channel,linear,sparse --jobs 1 --runs "$runs/plan" \
        --out "$here/$name/plan" threads=1 "$split"
    $py benchmarks/forecasting/blend.py --results "$here/$name/plan" --runs "$runs/plan" \
        --datasets ETTh1 --models patch,linear,channel,sparse
    for steps in 512 720; do
        $py benchmarks/forecasting/run.py --data "$data" --datasets ETTh1 --models sparse \
            --input-lengths $steps --minutes 2 --jobs 1 --runs "$runs/nomap" \
            --out "$here/$name/sparse_nomap_in$steps" threads=1 revin_affine=false \
            lr_decay=0.9 lr_decay_after=3 "$split"
    done
}
both_folds ""
$py "$here/choose.py"
