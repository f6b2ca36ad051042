"""Train `transduce demo` for several seeds in fp32 and bf16 and check that each run learns
steadily (the rule in benchmarks/demo/README.md): its validation curve, and held-out exact
match of the checkpoint validation chose and of the last one.

    python benchmarks/demo/stability.py [key=value ...] [--seeds 1 2 3 4 5]
        [--precisions fp32 bf16] [--jobs 2] [--work runs/demo_stability]

Runs go to ``--work`` (one run directory each, not kept in the repository); the summary to
``benchmarks/demo/stability.json`` (the documentation's results page is made from it), the
curves to ``docs/results/demo_stability.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIRST_PASS, MAX_DROP, LAST_GAP = 0.95, 0.02, 0.005  # the rule of benchmarks/demo/README.md


def steadiness(curve: list[tuple[int, float]]) -> dict:
    """The rule's two checks on a validation curve [(step, exact match)]."""
    scores = [s for _, s in curve]
    first = next((i for i, s in enumerate(scores) if s >= FIRST_PASS), None)
    drop = 0.0
    if first is not None:
        for i in range(first + 1, len(scores)):
            drop = max(drop, max(scores[:i]) - scores[i])
    gap = max(scores) - scores[-1]
    return {
        "first_pass_step": None if first is None else curve[first][0],
        "largest_drop": round(drop, 4),
        "last_below_best": round(gap, 4),
        "steady": first is not None and drop <= MAX_DROP + 1e-9 and gap <= LAST_GAP + 1e-9,
    }


def one_run(seed: int, precision: str, overrides: list[str], out: Path) -> dict:
    """In this process: train the demo, then score its last checkpoint on the held-out set."""
    import torch

    from transduce import runs
    from transduce.cli.main import main
    from transduce.data.numbers import german, held_out_numbers
    from transduce.evaluation import exact_match
    from transduce.nn import TransformerConfig, build_transformer
    from transduce.tasks.numbers.task import numbers_vocab, translate

    start = time.perf_counter()
    status = main(
        [
            "demo",
            f"seed={seed}",
            f"precision={precision}",
            "threads=1",
            *overrides,
            "--out",
            str(out),
        ]
    )
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"demo seed={seed} precision={precision} exited {status}")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").open(encoding="utf-8")]
    curve = [(r["step"], r["valid_exact_match"]) for r in rows if "valid_exact_match" in r]
    table = (out / "translations.tsv").read_text(encoding="utf-8").splitlines()[1:]
    best_held_out = sum(int(r.split("\t")[-1]) for r in table) / len(table)
    last = runs.step_checkpoints(out)[-1]
    record = runs.load_checkpoint(last)
    model = build_transformer(TransformerConfig(**record["model_config"]))
    model.load_state_dict(record["model"])
    numbers = held_out_numbers(len(table))
    hyps = translate(model, numbers, numbers_vocab(), torch.device("cpu"), precision)
    last_held_out = exact_match(hyps, [german(n) for n in numbers])
    return {
        "seed": seed,
        "precision": precision,
        "wall_s": round(wall, 1),
        "curve": curve,
        "held_out_best": best_held_out,
        "held_out_last": last_held_out,
        "last_step": record["step"],
        **steadiness(curve),
    }


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, precision in zip(axes, ("fp32", "bf16")):
        for r in (r for r in results if r["precision"] == precision):
            steps, scores = zip(*r["curve"])
            ax.plot(steps, [100 * s for s in scores], marker="o", ms=3, label=f"seed {r['seed']}")
        ax.axhline(100 * FIRST_PASS, color="grey", lw=0.8, ls="--")
        ax.set_title(f"{precision}")
        ax.set_xlabel("update")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("validation exact match (%)")
    axes[0].legend(fontsize=8)
    fig.suptitle("transduce demo: validation exact match, seeds 1–5")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table(results: list[dict], command: str, machine: str) -> str:
    lines = [
        f"Command: `{command}` on {machine}, one thread per run, two runs at a time.",
        "",
        "| precision | seed | first ≥ 95% at | largest later drop | last below best "
        "| held-out, best.pt | held-out, last | steady | training + evaluation |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['precision']} | {r['seed']} | {r['first_pass_step']} | "
            f"{100 * r['largest_drop']:.1f} | {100 * r['last_below_best']:.1f} | "
            f"{100 * r['held_out_best']:.1f}% | {100 * r['held_out_last']:.1f}% | "
            f"{'yes' if r['steady'] else 'no'} | {r['wall_s']:.0f} s |"
        )
    return "\n".join(lines) + "\n"


def machine() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{os.cpu_count()} cores of an {line.split(':', 1)[1].strip()}"
    return f"{os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("overrides", nargs="*", metavar="key=value")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "demo_stability")
    parser.add_argument(
        "--one", nargs=3, metavar=("SEED", "PRECISION", "OUT"), help=argparse.SUPPRESS
    )  # a worker process's own run
    parser.add_argument("--results", type=Path, default=HERE / "stability.json")
    args = parser.parse_args()
    if args.one:
        seed, precision, out = args.one
        result = one_run(int(seed), precision, args.overrides, Path(out))
        Path(out, "stability_row.json").write_text(json.dumps(result), encoding="utf-8")
        return

    def launch(job):
        seed, precision = job
        out = args.work / f"seed{seed}-{precision}"
        row = out / "stability_row.json"
        if not row.exists():  # a finished run is not trained again
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    *args.overrides,
                    "--one",
                    str(seed),
                    precision,
                    str(out),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                env={**os.environ, "OMP_NUM_THREADS": "1"},
            )
        return json.loads(row.read_text(encoding="utf-8"))

    jobs = [(s, p) for p in args.precisions for s in args.seeds]
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(launch, jobs))
    command = " ".join(["python benchmarks/demo/stability.py", *args.overrides])
    summary = {
        "command": command,
        "machine": machine(),
        "overrides": args.overrides,
        "steady": all(r["steady"] for r in results),
        "runs": results,
    }
    args.results.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    plot(results, ROOT / "docs" / "results" / "demo_stability.png")  # docs/results/demo.md
    print(table(results, command, summary["machine"]))
    print("every run steady" if summary["steady"] else "NOT every run steady")


if __name__ == "__main__":
    main()
