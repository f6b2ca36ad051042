"""Train variants of one translation config side by side and score each on val only.

    python benchmarks/multi30k/sweep.py --config configs/multi30k_en_de_tiny.yaml \
        --data data/multi30k --out runs/sweep \
        base prenorm:norm=pre lr3:lr=0.003 ff512:d_ff=512 [--threads 2] [--device auto]

Each variant is NAME or NAME:key=value,key=value (the overrides of `transduce train`); all
of them train at once, one process each, on the same device: on a GPU, where one small model
leaves most of the chip idle, eight of them run in about the time of two. Then `transduce
tune` chooses averaging, α and the n-gram block for each on val (tokenized lowercased BLEU,
beam 5), and the table of what each reached is written to --results (JSON and Markdown).
Test data is never read: choose a variant here, then train it where it is meant to run and
score it once with evaluate_run.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from transduce.io import write_text

HERE = Path(__file__).parent


def parse_variant(text: str) -> tuple[str, list[str]]:
    name, _, settings = text.partition(":")
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise SystemExit(f"sweep.py: variant {text!r}: expected NAME or NAME:key=value,...")
    overrides = [s for s in settings.split(",") if s]
    for s in overrides:
        if "=" not in s:
            raise SystemExit(f"sweep.py: variant {text!r}: {s!r} is not key=value")
    return name, overrides


def run_at_once(commands: dict[str, list[str]], logs: Path, stage: str,
                env: dict[str, str]) -> list[str]:
    """Start every command at once, each logging to LOGS/NAME.STAGE.log; wait for all of
    them. Returns the names whose command failed."""
    started = {}
    for name, command in commands.items():
        log = open(logs / f"{name}.{stage}.log", "w", encoding="utf-8")
        started[name] = (subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                          env=env), log)
    failed = []
    for name, (process, log) in started.items():
        if process.wait() != 0:
            failed.append(name)
        log.close()
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="+", help="NAME or NAME:key=value,key=value")
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="folder of the variants' runs")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads per process")
    parser.add_argument("--last", nargs="+", default=["10", "20", "40"])
    parser.add_argument("--lenpen", nargs="+", default=["1.0", "1.4"])
    parser.add_argument("--no-repeat-ngram", nargs="+", default=["0", "3"])
    parser.add_argument("--results", type=Path, default=HERE / "sweep_results")
    args = parser.parse_args()
    variants = dict(parse_variant(v) for v in args.variants)
    if len(variants) != len(args.variants):
        raise SystemExit("sweep.py: two variants share a name")
    for path, what in ((args.config, "--config"), (args.data, "--data")):
        if not path.exists():
            raise SystemExit(f"sweep.py: {what} {path} does not exist")
    taken = [n for n in variants if (args.out / n).exists()]
    if taken:
        raise SystemExit(f"sweep.py: {args.out}/{taken[0]} exists; choose another --out")
    args.out.mkdir(parents=True, exist_ok=True)
    python = [sys.executable, "-m", "transduce"]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}

    start = time.perf_counter()
    failed = run_at_once({
        name: [*python, "train", str(args.config), f"data_dir={args.data}",
               f"device={args.device}", f"threads={args.threads}", *overrides,
               "--run-dir", str(args.out / name)]
        for name, overrides in variants.items()}, args.out, "train", env)
    train_minutes = (time.perf_counter() - start) / 60
    if failed:
        print(f"sweep.py: training failed for {', '.join(failed)}; see "
              f"{args.out}/NAME.train.log", file=sys.stderr)

    tuned = [name for name in variants if name not in failed]
    failed += run_at_once({
        name: [*python, "tune", str(args.out / name), "--metric", "bleu_tok",
               "--device", args.device, "--last", *args.last, "--lenpen", *args.lenpen,
               "--no-repeat-ngram", *args.no_repeat_ngram]
        for name in tuned}, args.out, "tune", env)
    rows = {}
    for name in tuned:
        if name in failed:
            continue
        decoding = json.loads((args.out / name / "decoding.json").read_text(encoding="utf-8"))
        rows[name] = {"overrides": variants[name], "val_bleu_tok": decoding["bleu_tok"],
                      "chosen": {k: decoding[k] for k in ("last", "lenpen", "no_repeat_ngram")},
                      "grid": decoding["grid"]}
    results = {"config": str(args.config), "device": args.device, "threads": args.threads,
               "train_minutes_all_at_once": round(train_minutes, 1), "failed": failed,
               "variants": rows}
    write_text(args.results.with_suffix(".json"), json.dumps(results, indent=2) + "\n")
    lines = [f"Variants of `{args.config}`, trained at once ({train_minutes:.1f} min), "
             "scored on val only (tokenized lowercased BLEU, beam 5, chosen by `transduce "
             "tune`).", "", "| variant | overrides | val BLEU (tok) | chosen |",
             "|---|---|---:|---|"]
    for name, row in sorted(rows.items(), key=lambda kv: -kv[1]["val_bleu_tok"]):
        c = row["chosen"]
        lines.append(f"| {name} | {' '.join(row['overrides']) or '(none)'} | "
                     f"{row['val_bleu_tok']:.2f} | last {c['last']}, α {c['lenpen']}, "
                     f"block {c['no_repeat_ngram']} |")
    write_text(args.results.with_suffix(".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
