# Shell functions that train ETTh1's backtest candidates on one fold (and run both folds),
# sourced by choose.sh, seeds.sh and middle.sh (README.md). They read $data, $py and $here.
nomap=(revin_affine=false lr_decay=0.9 lr_decay_after=3)
family() {  # FOLD ROWS SEED: plan's sparse at 336, sparse without the map (512 and 720 steps)
    local runs=runs/bench/etth1_bt_s$3/$1 out=$here/seeds/s$3/$1 common=(threads=1 seed=$3 split=rows:$2)
    $py benchmarks/forecasting/run.py --data "$data" --plan benchmarks/forecasting/plan.yaml \
        --datasets ETTh1 --models sparse --horizons 336 --jobs 1 --runs "$runs/plan" \
        --out "$out/plan_sparse" "${common[@]}"
    $py benchmarks/forecasting/run.py --data "$data" --datasets ETTh1 --models sparse \
        --horizons 192,336,720 --input-lengths 512 --minutes 2 --jobs 1 --runs "$runs/nomap" \
        --out "$out/sparse_nomap_in512" "${common[@]}" "${nomap[@]}"
    $py benchmarks/forecasting/run.py --data "$data" --datasets ETTh1 --models sparse \
        --horizons 720 --input-lengths 720 --minutes 2 --jobs 1 --runs "$runs/nomap" \
        --out "$out/sparse_nomap_in720" "${common[@]}" "${nomap[@]}"
}
blend_at() {  # HORIZON FOLD ROWS SEED: the plan's four models at HORIZON and their blend
    local runs=runs/bench/etth1_bt_s$4/$2 out=$here/seeds/s$4/$2
    $py benchmarks/forecasting/run.py --data "$data" --plan benchmarks/forecasting/plan.yaml \
        --datasets ETTh1 --models patch,channel,linear,sparse --horizons $1 --jobs 1 \
        --runs "$runs/plan" --out "$out/plan" threads=1 seed=$4 split=rows:$3
    $py benchmarks/forecasting/blend.py --results "$out/plan" --runs "$runs/plan" \
        --datasets ETTh1 --models patch,linear,channel,sparse
}
both_folds() {  # LOG_PREFIX: the caller's `fold FOLD ROWS` on f1 and f2 side by side, each
    # logging to runs/bench/etth1_bt/LOG_PREFIXFOLD.log
    mkdir -p runs/bench/etth1_bt
    fold f1 5760,8640,11520 > "runs/bench/etth1_bt/${1}f1.log" 2>&1 &
    local one=$!
    fold f2 2880,5760,8640 > "runs/bench/etth1_bt/${1}f2.log" 2>&1 &
    local two=$!
    wait $one; wait $two
}
