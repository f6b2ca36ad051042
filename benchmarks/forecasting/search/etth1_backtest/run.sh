#!/usr/bin/env bash
# ETTh1 `sparse` at 720 with and without RevIN's learned map on two backtest folds (README.md).
# Usage, from the repository root, after the plan's run of seed 2021 (its config is reused):
#   bash benchmarks/forecasting/search/etth1_backtest/run.sh
set -euo pipefail
py=${PYTHON:-.venv/bin/python}
config=runs/bench/in720_s2021/ETTh1_sparse_720_in720/config.yaml
here=benchmarks/forecasting/search/etth1_backtest
mkdir -p runs/bench/etth1_backtest
for seed in 2021 1 2; do
    for variant in map nomap; do
        extra=""; [ "$variant" = nomap ] && extra="revin_affine=false"
        run=runs/bench/etth1_backtest/${variant}_s${seed}
        $py -m transduce forecast backtest "$config" seed=$seed threads=1 $extra \
            --folds 2 --jobs 2 --run-dir "$run" > "$run.out" 2>&1 || { cat "$run.out"; exit 1; }
        mkdir -p "$here/${variant}_s${seed}"
        cp "$run/backtest.json" "$here/${variant}_s${seed}/"
        tail -3 "$run.out"
    done
done
