#!/usr/bin/env bash
# ETTh1 `patch` at 96, 192 and 336 without RevIN's learned map, seeds 2021, 1 and 2, two
# runs at a time, longest first (README.md). From the repository root:
#   bash benchmarks/forecasting/search/patch_revin_affine/run.sh DATA_DIR
set -euo pipefail
data=${1:?usage: run.sh DATA_DIR (the folder holding ETTh1.csv)}
export data py=${PYTHON:-python}
one() {  # SEED HORIZON
    $py benchmarks/forecasting/run.py --data "$data" --plan benchmarks/forecasting/plan.yaml \
        --datasets ETTh1 --models patch --horizons "$2" --jobs 1 --runs "runs/bench/pra_s$1" \
        --out "benchmarks/forecasting/search/patch_revin_affine/seed_$1/h$2" threads=1 \
        "seed=$1" revin_affine=false > "/tmp/pra_s$1_h$2.log" 2>&1
    echo "seed $1 horizon $2: done"
}
export -f one
for h in 192 336 96; do for s in 2021 1 2; do echo "$s $h"; done; done |
    xargs -P 2 -L 1 bash -c 'one $0 $1'
