"""The encoder on its own against published figures: TREC-6 question classification, UD
English-EWT part-of-speech tagging, WNUT-17 entities.

    python benchmarks/text/run.py --data ../shared/data --tasks trec,upos,wnut

Each task trains its candidates (written in arms.py, before the runs they report) for 20 epochs
or the task's minutes, whichever comes first, two side by side on one thread each. A
candidate marked ``mlm`` is the BERT recipe at equal total time: a masked language model
pre-trained for half the minutes on unlabeled English (UNLABELED: the three tasks'
training sentences and Multi30k's training captions, no label read), then fine-tuned for
the other half; one marked ``upos`` or ``xpos`` pre-trains instead a tagger of UD
English-EWT's training sentences (its UPOS or XPOS column, validated on EWT's dev), the
same encoder as the arm's. Among the candidates whose run took no longer than the issue
allows (LIMITS, wall-clock minutes), the one of best validation score (dev, or for TREC a
held-out tenth of train) is chosen, and only then is every candidate's test score read.
Writes benchmarks/text/results.json (per task: each candidate's settings, and its
pre-training's, validation and test score, minutes; the choice, the command, the commit).
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
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

from arms import (  # noqa: E402  (the script's own folder)
    AVERAGE,
    COMMON,
    EWT,
    LIMITS,
    MINUTES,
    MLM,
    PRE,
    PRETRAINING,
    RELATIVE,
    SHAPING,
    TAGGERS,
    TASKS,
    UNLABELED,
)

from transduce.api.text import TextModel  # noqa: E402
from transduce.runs import average_run  # noqa: E402


def unlabeled_text(data: Path, out: Path) -> Path:
    """The unlabeled sentences of UNLABELED, a line each (labels and tags dropped)."""
    from transduce.data.labelled import read_lines, read_sentences, read_tagged

    lines = []
    for name, format in UNLABELED:
        if format == "trec":
            lines += read_sentences(data / name, "trec", replace_invalid=True).texts
        elif format == "lines":
            lines += read_lines(data / name).texts
        else:
            lines += [" ".join(words) for words in read_tagged(data / name, format).words]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def train(argv: list[str], run: Path) -> None:
    """`transduce text train` in a process of its own (two run side by side)."""
    log = run.with_suffix(".log")
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, "-m", "transduce", "text", "train", *argv, "--run-dir", str(run)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
    if done.returncode:
        raise SystemExit(f"{run.name}: training failed; see {log}")


def candidate(args, task: str, name: str, extra: list[str]) -> dict:
    """Train one candidate (pre-training first for a marked one); its settings (and its
    pre-training's, with its best validation score) and best validation score."""
    _, minutes, files, settings, shared, _ = TASKS[task]
    marks = (MINUTES, PRE, AVERAGE)
    own = [s for s in extra if s not in PRETRAINING and not s.startswith(marks)]
    argv = [*(f"{k}=DATA/{v}" for k, v in files.items()), *settings, *shared, *COMMON, *own]
    began, run, row = time.time(), args.runs / f"{task}_{name}", {}
    [kind] = [s for s in extra if s in PRETRAINING] or [""]
    halves = budgets(extra, minutes, kind)
    if kind:
        pre = f"{task}_{name}_pretrain"
        threads = [s for s in own if s.startswith("threads=")]  # the arm's own, if any
        before = [*pretraining(args, task, kind, own), *COMMON, *threads]
        before += [s.removeprefix(PRE) for s in extra if s.startswith(PRE)]
        before.append(f"max_minutes={halves[0]}")
        train(resolved(args, before), args.runs / pre)
        row["pretraining"] = before
        row["pretraining_validation"] = max(curve(args.runs / pre, "val_accuracy"))
        argv.append(f"init=RUNS/{pre}")  # the runs folder is the caller's
    argv.append(f"max_minutes={halves[-1]}")
    train(resolved(args, argv), run)
    scores = curve(run, "val_f1" if task == "wnut" else "val_accuracy")
    row["validation"] = max(scores)
    [last] = [int(s.removeprefix(AVERAGE)) for s in extra if s.startswith(AVERAGE)] or [0]
    if last:  # its model (and so its test) is the mean of its last checkpoints
        average_run(run, last)
        row["averaged"], row["validation_best_checkpoint"] = last, row["validation"]
        row["validation"] = round(score(TextModel(run).score(args.data / files["valid"])), 4)
    return {
        "settings": argv,
        "pretrained": kind,
        **row,
        "validation_by_epoch": [round(v, 2) for v in scores],
        "budget_minutes": list(halves),
        "minutes": round((time.time() - began) / 60, 1),
    }


def budgets(extra: list[str], minutes: float, kind: str) -> tuple[float, ...]:
    """An arm's training minutes: (pre-training, fine-tuning) for a pre-trained arm, else
    (minutes,); the task's ``minutes`` unless the arm's MINUTES marker gives its own."""
    [own] = [s.removeprefix(MINUTES) for s in extra if s.startswith(MINUTES)] or [""]
    parts = tuple(float(part) for part in own.split("+")) if own else ()
    if not parts:
        parts = (minutes / 2, minutes / 2) if kind else (minutes,)
    if len(parts) != (2 if kind else 1):
        raise SystemExit(f"{MINUTES}{own}: give PRE+FINE for a pre-trained arm, else one figure")
    return parts


def resolved(args, argv: list[str]) -> list[str]:
    """``argv`` with its DATA/ and RUNS/ paths where they are on this machine."""
    places = {"=DATA/": args.data.resolve(), "=RUNS/": args.runs.resolve()}
    for mark, place in places.items():
        argv = [s.replace(mark, f"={place}/", 1) for s in argv]
    return argv


def curve(run: Path, key: str) -> list[float]:
    """The run's validation score ``key`` at each validation, in order."""
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [m[key] for m in metrics if key in m]


def pretraining(args, task: str, kind: str, own: list[str]) -> list[str]:
    """The settings of an arm's pre-training run: a masked language model of UNLABELED,
    or a tagger of EWT's UPOS or XPOS, the same encoder as the arm's."""
    _, _, _, settings, shared, _ = TASKS[task]
    if kind == MLM:
        text = unlabeled_text(args.data, args.runs / f"{task}_unlabeled.txt")
        mlm = ["task=mlm", "format=lines", f"train=RUNS/{text.name}", "vocab_size=8000"]
        return [*mlm, *shared, *(s for s in own if s == RELATIVE)]  # as the fine-tuned model
    paths = [f"{k}=DATA/{v}" for k, v in EWT.items()]
    tagger = ["task=tag", "format=conllu", TAGGERS[kind], *paths, *shared]
    return tagger + [s for s in (*settings, *own) if s.startswith(SHAPING)]


def choose(rows: dict, limit: float) -> str:
    """The candidate of best validation score among those whose run took at most
    ``limit`` minutes (a tie: the first listed); among all if none did."""
    within = {name: row for name, row in rows.items() if row["minutes"] <= limit} or rows
    return max(within, key=lambda name: within[name]["validation"])


def record(task: str, rows: dict, **fields) -> dict:
    """A task's entry of the results file: its rows, its choice and that choice's test."""
    target, minutes, *_ = TASKS[task]
    chosen = choose(rows, LIMITS[task])
    return {
        "target": target,
        "minutes_each": minutes,
        "limit_minutes": LIMITS[task],
        "chosen": chosen,
        "test": rows[chosen]["test"],
        "reached": rows[chosen]["test"] >= target,
        "candidates": rows,
        **fields,
    }


def score(result: dict) -> float:
    return result["entities"]["micro"]["f1"] if "entities" in result else result["accuracy"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--tasks", default="trec", help="comma-separated: trec, upos, wnut")
    parser.add_argument(
        "--add",
        default="",
        help="comma-separated candidates of the one task given, run beside the rows the "
        "results file holds for it (each row keeps its commit); the choice is made again "
        "among all, on validation, and only the new rows' test is read",
    )
    parser.add_argument(
        "--choose",
        action="store_true",
        help="train nothing: make each task's choice again among its saved rows (after a "
        "change of the rule; every row's test is read already)",
    )
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "bench" / "text")
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    args = parser.parse_args()
    saved = json.loads(args.out.read_text()) if args.out.exists() else {}
    if args.choose:
        for task in args.tasks.split(","):
            kept = {k: saved[task][k] for k in ("minutes", "command", "commit")}
            saved[task] = record(task, saved[task]["candidates"], **kept)
            print(f"{task}: {saved[task]['chosen']}, test {saved[task]['test']}")
        args.out.write_text(json.dumps(saved, indent=1) + "\n", encoding="utf-8")
        return
    names = {task: list(TASKS[task][-1]) for task in args.tasks.split(",")}
    if args.add:  # one task (a list of them is no key of the results file)
        task, added = args.tasks, args.add.split(",")
        if task not in saved or not set(added) <= set(names[task]):
            raise SystemExit("--add: give one task whose results are saved, and its candidates")
        names[task] = added
    earlier = [  # `text train` resumes a run folder: an earlier run would be read as new
        path.name
        for task in names
        for name in names[task]
        for path in (args.runs / f"{task}_{name}", args.runs / f"{task}_{name}_pretrain")
        if path.exists()
    ]
    if earlier:
        raise SystemExit(
            f"{args.runs} holds earlier runs ({', '.join(earlier)}); give --runs an empty folder"
        )
    args.runs.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    for task in names:
        *_, candidates = TASKS[task]
        start = time.time()
        with ThreadPoolExecutor(max_workers=2) as pool:
            jobs = {n: pool.submit(candidate, args, task, n, candidates[n]) for n in names[task]}
            rows = {name: {**job.result(), "commit": commit} for name, job in jobs.items()}
        kept = saved[task]["candidates"] if args.add else {}
        for row in kept.values():
            row.setdefault("commit", saved[task]["commit"])
        merged = {**kept, **rows}
        every = {n: merged[n] for n in candidates if n in merged}  # in the candidates' order
        chosen = choose(every, LIMITS[task])  # before any test is read
        print(f"{task}: chose {chosen} on validation", flush=True)
        for name in rows:
            result = TextModel(args.runs / f"{task}_{name}").test()
            rows[name]["test"] = round(score(result), 2)
            if "entities" in result:
                rows[name]["test_entities"] = result["entities"]["micro"]
        added = f" --add {args.add}" if args.add else ""
        saved[task] = record(
            task,
            every,
            minutes=round((time.time() - start) / 60, 1),
            command=f"python benchmarks/text/run.py --data DATA --tasks {task}{added}",
            commit=commit,
        )
        print(json.dumps(saved[task], indent=1), flush=True)
        args.out.write_text(json.dumps(saved, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
