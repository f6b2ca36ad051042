"""Training updates with and without glibc keeping freed memory (transduce.device.
retain_freed_memory, which the engine calls on a CPU), side by side on this machine.

    python benchmarks/speed/allocator.py --data /work/shared/data/timeseries

Each measurement is its own process (the setting lasts for a process), the two settings
alternating, ``--repeats`` times each; a process times ``--updates`` training updates of
a fresh model after 3 warm-up updates, on one thread, in the precision ``auto`` picks.
Writes benchmarks/speed/allocator.json and allocator.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
CASES = {  # name: (config, CSV in --data, overrides)
    "ETTh1-96 patch": ("forecast_etth1_patch.yaml", "ETTh1.csv", ["horizon=96"]),
    "ETTh1-96 transformer": ("forecast_etth1_transformer.yaml", "ETTh1.csv", ["horizon=96"]),
    "ILI-24 patch": ("forecast_ili_patch.yaml", "national_illness.csv", ["horizon=24"]),
}


def child(args) -> None:
    import torch

    from transduce.config_files import load_config
    from transduce.device import autocast, resolve_precision, retain_freed_memory
    from transduce.tasks.forecasting.config import ForecastConfig
    from transduce.tasks.forecasting.data import load_forecast_data
    from transduce.tasks.forecasting.task import ForecastTask

    torch.set_num_threads(1)
    if args.retain and not retain_freed_memory():
        sys.exit("this C library is not glibc: nothing to compare")
    config, csv, overrides = CASES[args.case]
    cfg = load_config(
        ForecastConfig, ROOT / "configs" / config, [f"csv={Path(args.data) / csv}", *overrides]
    )
    data = load_forecast_data(cfg)
    device = torch.device("cpu")
    precision = resolve_precision("auto", device)

    class Session:
        world = 1

    Session.device = device
    task = ForecastTask(cfg, data, Session())
    torch.manual_seed(0)
    model = task.build_model().train()
    optimizer, _ = task.build_optimizer(model)
    batches = task.batches(0)
    times = []
    for i, batch in enumerate(batches[: 3 + args.updates]):
        start = time.perf_counter()
        with autocast(device, precision):
            loss, count = task.loss(model, batch)
        (loss / count).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i >= 3:
            times.append(time.perf_counter() - start)
    print(json.dumps({"seconds_per_update": statistics.median(times), "precision": precision}))


def measure(args, case: str, retain: bool) -> dict:
    command = [
        sys.executable,
        __file__,
        "--child",
        "--case",
        case,
        "--data",
        args.data,
        "--updates",
        str(args.updates),
    ] + ["--retain"] * retain
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    if done.returncode:
        sys.exit(f"{case}: {done.stderr.strip().splitlines()[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", required=True, help="folder with ETTh1.csv and national_illness.csv"
    )
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(HERE / "allocator"), help="results path stem")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--retain", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    cases = args.cases.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"--cases: unknown {unknown}; choose from {list(CASES)}")
    rows = []
    for case in cases:
        seconds = {False: [], True: []}
        for _ in range(args.repeats):
            for retain in (False, True):
                seconds[retain].append(measure(args, case, retain)["seconds_per_update"])
        base, kept = statistics.median(seconds[False]), statistics.median(seconds[True])
        rows.append(
            {
                "case": case,
                "default_s": round(base, 4),
                "retained_s": round(kept, 4),
                "speedup": round(base / kept, 3),
                "runs": {"default": seconds[False], "retained": seconds[True]},
            }
        )
        print(
            f"{case}: {base:.3f} s/update by default, {kept:.3f} retained, {base / kept:.2f}×",
            flush=True,
        )
    command = "python benchmarks/speed/allocator.py " + " ".join(sys.argv[1:])
    Path(args.out + ".json").write_text(
        json.dumps({"command": command, "rows": rows}, indent=2) + "\n"
    )
    lines = [
        f"`{command}`",
        "",
        f"Median seconds per training update (1 thread, {args.updates} updates after 3 "
        f"warm-up, {args.repeats} processes each, alternating):",
        "",
        "| case | glibc default | freed memory retained | speed-up |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r['case']} | {r['default_s']:.3f} | {r['retained_s']:.3f} | {r['speedup']:.2f}× |"
        for r in rows
    ]
    Path(args.out + ".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
