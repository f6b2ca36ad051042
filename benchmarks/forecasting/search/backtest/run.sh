#!/usr/bin/env bash
# exchange_rate's candidates on three backtest splits and, for the candidates without rows
# yet, on the protocol's split (README.md). Usage, from the repository root:
#   bash benchmarks/forecasting/search/backtest/run.sh DATA_DIR
set -euo pipefail
data=${1:?usage: run.sh DATA_DIR (the folder holding exchange_rate.csv)}
py=${PYTHON:-python}
here=benchmarks/forecasting/search/backtest
runs=runs/bench/backtest
bench() {  # SPLIT_NAME VARIANT SPLIT_SETTING ARGS...
    local name=$1 variant=$2 split=$3; shift 3
    $py benchmarks/forecasting/run.py --data "$data" --datasets exchange_rate --jobs 2 \
        --runs "$runs/$name/$variant" --out "$here/$name/$variant" "$@" threads=1 ${split}
}
variants() {  # SPLIT_NAME SPLIT_SETTING: the four candidates that are not the plan's rows
    local name=$1 split=$2
    bench "$name" patch_mse "$split" --plan benchmarks/forecasting/plan.yaml --models patch \
        point_loss=mse
    bench "$name" sparse_nomap "$split" --plan benchmarks/forecasting/plan.yaml \
        --models sparse revin_affine=false
    bench "$name" linear_norevin "$split" --plan benchmarks/forecasting/plan.yaml \
        --models linear revin=false
    bench "$name" dlinear "$split" --models linear --input-lengths 96,336 --minutes 1.5 \
        trend_kernel=25 revin=false batch_size=8 lr=0.0005 lr_decay=0.5 lr_decay_after=1 \
        max_epochs=10
}
for fold in f1:3794,4554,6071 f2:3034,3794,5311 f3:2274,3034,4551; do
    name=${fold%%:*} split=split=rows:${fold#*:}
    bench "$name" plan "$split" --plan benchmarks/forecasting/plan.yaml \
        --models patch,channel,transformer,linear,sparse,repeat
    $py benchmarks/forecasting/blend.py --results "$here/$name/plan" --runs "$runs/$name/plan" \
        --datasets exchange_rate --models patch,channel,linear,transformer,repeat,sparse
    variants "$name" "$split"
done
variants protocol ""
$py "$here/choose.py"
