"""Training throughput on this machine's CPU cores: one process with all threads against
several processes of one thread each (torchrun, gloo), on the shipped Multi30k config.

    python benchmarks/processes/run.py --data data/multi30k

Each layout trains the same updates from scratch, one after another (never side by side).
``--baseline-src OLD/src`` also times a one-process run of another checkout (e.g. the
commit before a change to the training loop) over the same updates: training seconds for
the same batches, so the ratio is the loop's own speed. Results go to results.json and
results.md beside this file, one section per machine (CPU model, cores, precision): a run
replaces its own machine's section and keeps the others.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
CONFIG = ROOT / "configs" / "multi30k_en_de.yaml"


def train(command: list[str], run_dir: Path, env: dict) -> dict:
    """Run a training command to completion; training seconds and tokens from its metrics."""
    if run_dir.exists():
        raise SystemExit(f"{run_dir}: exists; remove it or give another --work-dir")
    subprocess.run(command, check=True, env={**os.environ, **env})
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    last = [r for r in rows if "valid_bleu" in r][-1]
    rates = [r["tokens_per_s"] for r in rows if "tokens_per_s" in r]
    return {
        "steps": last["step"],
        "training_seconds": last["elapsed_s"],
        "tokens_per_s": rates,
        "mean_tokens_per_s": round(sum(rates) / len(rates)) if rates else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with the Multi30k raw files")
    parser.add_argument("--steps", type=int, default=100, help="updates per layout")
    parser.add_argument("--cores", type=int, default=os.cpu_count())
    parser.add_argument("--work-dir", default=str(ROOT / "runs" / "bench" / "processes"))
    parser.add_argument("--baseline-src", help="src/ of another checkout to time as well")
    args = parser.parse_args()
    work = Path(args.work_dir)
    common = [
        str(CONFIG),
        f"data_dir={Path(args.data).resolve()}",
        f"max_steps={args.steps}",
        "max_minutes=0",
        f"valid_every={args.steps}",
        "valid_bleu_sentences=20",
        "precision=auto",
    ]
    n = args.cores
    layouts = {
        f"1 process × {n} threads": (
            [sys.executable, "-m", "transduce", "train", *common, f"threads={n}", "log_every=10"],
            {},
        ),
        f"{n} processes × 1 thread (accumulate=1)": (
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                f"--nproc_per_node={n}",
                "-m",
                "transduce",
                "train",
                *common,
                "threads=1",
                "log_every=10",
            ],
            {"OMP_NUM_THREADS": "1"},
        ),
    }
    if args.baseline_src:  # its loop logs every 100 updates only
        layouts[f"baseline, 1 process × {n} threads"] = (
            [sys.executable, "-m", "transduce", "train", *common, f"threads={n}"],
            {"PYTHONPATH": str(Path(args.baseline_src).resolve())},
        )
    results = {}
    for i, (name, (command, env)) in enumerate(layouts.items()):
        run_dir = work / f"layout{i}"
        print(f"== {name}", flush=True)
        results[name] = train([*command, "--run-dir", str(run_dir)], run_dir, env)
    base = results[f"1 process × {n} threads"]
    lines = [
        "| layout | updates | tokens per update | training seconds | target tokens/s |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        per_update = f"×{n}" if "processes" in name else "×1"
        tokens_s = r["mean_tokens_per_s"] or "(not logged)"
        lines.append(
            f"| {name} | {r['steps']} | {per_update} | {r['training_seconds']} | {tokens_s} |"
        )
        r["seconds_ratio_to_one_process"] = round(
            r["training_seconds"] / base["training_seconds"], 3
        )
    everything = load_results()
    everything[machine_label()] = {"table": lines, "layouts": results}
    (HERE / "results.json").write_text(json.dumps(everything, indent=2) + "\n")
    (HERE / "results.md").write_text(markdown(everything))
    print("\n".join(lines))


def machine_label() -> str:
    """CPU model, cores and the precision training takes on it (bf16 where it is native)."""
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks" / "speed"))
    from plot import machine

    from transduce.device import resolve_precision

    return f"{machine()}, {resolve_precision('auto', torch.device('cpu'))}"


def load_results() -> dict:
    """Earlier machines' sections of results.json ({machine: {"table", "layouts"}})."""
    path = HERE / "results.json"
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def markdown(everything: dict) -> str:
    parts = []
    for name, section in everything.items():
        parts += [f"### {name}", "", *section["table"], ""]
    return "\n".join(parts)


if __name__ == "__main__":
    main()
