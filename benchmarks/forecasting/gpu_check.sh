#!/usr/bin/env bash
# The forecasting side on a CUDA GPU (gpu_h200.md), in steps that fit one device call each:
#   1. tests/forecasting/test_cuda.py: every model trains on the GPU (bf16, and fp16 with a
#      gradient scaler), its run is tested, predicted and plotted from the checkpoint on the
#      CPU, and a forward pass on the GPU equals the CPU's;
#   2. ETTh1's patch config (336 -> 96), three epochs, on the GPU and then on the same
#      machine's CPU (PyTorch's default threads), side by side: seconds per epoch;
#   3. the forecasting tests (70 s on an H200), where device=auto is the GPU;
#   4. the rest of the suite (over 8 minutes there: a step of its own);
#   suite: the whole suite at once, in 12 pytest-xdist workers (the GPU image has xdist),
#      for a device call that can hold no more than one step.
# usage: bash benchmarks/forecasting/gpu_check.sh PATH/ETTh1.csv OUT_DIR [PYTHON] [STEPS]
# STEPS: any of cuda,speed,forecasting,other,suite (default cuda,speed,forecasting: 3 minutes).
# Writes OUT_DIR/{gpu.txt,cuda_tests.log,speed.txt,speed_cuda.log,speed_cpu.log,
# forecasting_tests.log,other_tests.log,suite_tests.log}. Nothing here reads test data to
# choose anything.
set -u
csv=$(realpath "$1"); out=$(realpath -m "$2"); py=${3:-python3}
steps=,${4:-cuda,speed,forecasting},
for step in ${steps//,/ }; do
    case $step in cuda|speed|forecasting|other|suite) ;;
        *) echo "gpu_check.sh: unknown step '$step'; give any of cuda,speed,forecasting,other,suite" >&2
           exit 2 ;;
    esac
done
wants() { [[ $steps == *,$1,* ]]; }
mkdir -p "$out"
work=$(mktemp -d)
# packages the GPU image lacks (sacremoses, FastAPI, uvicorn and theirs), carried as wheels in
# .whl (the device tool's README says how to fetch them), are installed beside it first
site=""
if ls .whl/*.whl >/dev/null 2>&1; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$work/site" .whl/*.whl && site="$work/site"
fi
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/src${site:+:$site}${PYTHONPATH:+:$PYTHONPATH}"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$py" -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
  nproc; } 2>&1 | tee "$out/gpu.txt"

# pytest within SECONDS, its whole log to OUT/LOG, failures and the summary to the terminal;
# -v names each test as it ends, so a run stopped by its cap still names its failures
run_tests() {  # SECONDS LOG PYTEST_ARGS...
    local seconds=$1 log=$2
    shift 2
    timeout "$seconds" "$py" -m pytest -v -p no:cacheprovider -rs "$@" 2>&1 |
        tee "$out/$log" | grep -E "FAILED|ERROR|^=+ .* in [0-9.]+s"
}

wants cuda && run_tests 200 cuda_tests.log tests/forecasting/test_cuda.py

wants speed && for dev in cuda cpu; do
    start=$(date +%s.%N)
    timeout 150 "$py" -m transduce forecast train configs/forecast_etth1_patch.yaml \
        "csv=$csv" max_epochs=3 patience=0 "device=$dev" --run-dir "$work/$dev" \
        > "$out/speed_$dev.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    # the engine's elapsed_s at each epoch's validation: (t3 - t1) / 2 is an epoch's
    # training and validation, start-up and the first epoch's warm-up left out
    epochs=$(grep val_mse "$work/$dev/train.log" 2>/dev/null | grep -o 'elapsed_s [0-9.]*' |
             awk '{print $2}' | tr '\n' ' ')
    wall=$(awk "BEGIN {print $end - $start}")
    echo "$dev rc=$rc wall_s=$wall elapsed_s_after_each_epoch: $epochs" | tee -a "$out/speed.txt"
    grep -m1 'parameters;' "$work/$dev/train.log" 2>/dev/null | tee -a "$out/speed.txt"
done

wants forecasting && run_tests 150 forecasting_tests.log tests/forecasting
# a module whose package the GPU image lacks (FastAPI, for the server) fails to collect; the
# rest runs
wants other && run_tests 540 other_tests.log --ignore=tests/forecasting --continue-on-collection-errors tests
wants suite && run_tests 450 suite_tests.log -n 12 tests
rm -rf "$work"
