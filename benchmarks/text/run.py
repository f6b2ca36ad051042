"""The encoder on its own against published figures: TREC-6 question classification, UD
English-EWT part-of-speech tagging, WNUT-17 entities.

    python benchmarks/text/run.py --data ../shared/data --tasks trec [--minutes 6]

Each task trains its candidates (written below, before any run) from scratch within
``--minutes`` of training each, on two threads; the one of best validation score (dev, or
for TREC a held-out tenth of train) is chosen, and only then is every candidate's test
score read. Writes benchmarks/text/results.json (per task: each candidate's validation and
test score, the choice, the minutes it took, the command and the commit).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

from transduce.api.text import TextModel  # noqa: E402
from transduce.cli.main import main as transduce  # noqa: E402

SIZES = ["d_model=128", "d_ff=512", "num_heads=4", "num_encoder_layers=2", "dropout=0.2"]
COMMON = ["batch_size=32", "lr=0.0005", "warmup=300", "patience=0", "threads=2", "lowercase=true"]
# task -> (published figure to reach, files, settings, candidates: name -> settings)
TASKS = {
    "trec": (
        93.6,
        {"train": "trec/TREC.train", "test": "trec/TREC.test"},
        ["task=classify", "format=trec", "replace_invalid=true", "vocab_size=4000"],
        {"cls": ["pooling=cls"], "mean": ["pooling=mean"]},
    ),
    "upos": (
        95.5,
        {
            "train": "ud_ewt/en_ewt-ud-train.conllu",
            "valid": "ud_ewt/en_ewt-ud-dev.conllu",
            "test": "ud_ewt/en_ewt-ud-test.conllu",
        },
        ["task=tag", "format=conllu", "column=4", "vocab_size=8000", "max_tokens=256"],
        {"first_subword": []},
    ),
    "wnut": (
        41.9,
        {
            "train": "wnut17/wnut17train.conll",
            "valid": "wnut17/emerging.dev.conll",
            "test": "wnut17/emerging.test.annotated",
        },
        ["task=entities", "format=conll", "vocab_size=8000", "max_tokens=256"],
        {"first_subword": []},
    ),
}


# The BERT recipe against training from scratch at equal total time (TREC): pre-train a
# masked language model on unlabeled English (the training questions, UD EWT's training
# sentences and WNUT-17's training tweets: text files, no label read), then fine-tune;
# against the chosen scratch settings trained for the whole time.
UNLABELED = [("trec/TREC.train", "trec"), ("ud_ewt/en_ewt-ud-train.conllu", "conllu")]
UNLABELED += [("wnut17/wnut17train.conll", "conll")]


def unlabeled_text(data: Path, out: Path) -> Path:
    """The unlabeled sentences of UNLABELED, a line each (labels and tags dropped)."""
    from transduce.data.labelled import read_sentences, read_tagged

    lines = []
    for name, format in UNLABELED:
        if format == "trec":
            lines += read_sentences(data / name, "trec", replace_invalid=True).texts
        else:
            lines += [" ".join(words) for words in read_tagged(data / name, format).words]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def recipe(args, saved: dict, commit: str) -> None:
    """TREC from scratch for --minutes against MLM for half of it plus fine-tuning for the
    other half; both choose their checkpoint on the held-out tenth of train."""
    _, files, settings, candidates = TASKS["trec"]
    chosen = saved["trec"]["chosen"]  # the scratch settings validation chose
    paths = [f"{k}={(args.data / v).resolve()}" for k, v in files.items()]
    budget = ["max_epochs=0", "patience=0"]
    text = unlabeled_text(args.data, args.runs / "unlabeled.txt")
    half = args.minutes / 2
    pre = args.runs / "trec_mlm"
    arms = {
        "scratch": [
            *paths,
            *settings,
            *SIZES,
            *COMMON,
            *candidates[chosen],
            *budget,
            f"max_minutes={args.minutes}",
        ],
        "mlm_then_fine_tune": [
            *paths,
            *settings,
            *SIZES,
            *COMMON,
            *candidates[chosen],
            *budget,
            f"max_minutes={half}",
            f"init={pre}",
        ],
    }
    began = time.time()
    mlm = [
        "task=mlm",
        "format=lines",
        f"train={text}",
        "vocab_size=8000",
        *SIZES,
        *COMMON,
        *budget,
        f"max_minutes={half}",
    ]
    if transduce(["text", "train", *mlm, "--run-dir", str(pre)]):
        raise SystemExit("mlm: training failed")
    rows = {}
    for name, argv in arms.items():
        run = args.runs / f"trec_{name}"
        if transduce(["text", "train", *argv, "--run-dir", str(run)]):
            raise SystemExit(f"{name}: training failed")
        metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        rows[name] = {"validation": max(m["val_accuracy"] for m in metrics if "val_accuracy" in m)}
    for name in rows:
        rows[name]["test"] = round(score(TextModel(args.runs / f"trec_{name}").test()), 2)
    saved["trec_recipe"] = {
        "minutes_each": args.minutes,
        "unlabeled_sentences": sum(1 for _ in text.open(encoding="utf-8")),
        "arms": rows,
        "minutes": round((time.time() - began) / 60, 1),
        "command": f"python benchmarks/text/run.py --data DATA --recipe --minutes {args.minutes}",
        "commit": commit,
    }
    print(json.dumps(saved["trec_recipe"], indent=1), flush=True)
    args.out.write_text(json.dumps(saved, indent=1) + "\n", encoding="utf-8")


def score(result: dict) -> float:
    return result["entities"]["micro"]["f1"] if "entities" in result else result["accuracy"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--tasks", default="trec", help="comma-separated: trec, upos, wnut")
    parser.add_argument("--minutes", type=float, default=6.0, help="training minutes a run")
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "bench" / "text")
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    parser.add_argument("--recipe", action="store_true", help="the BERT recipe on TREC")
    args = parser.parse_args()
    saved = json.loads(args.out.read_text()) if args.out.exists() else {}
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    if args.recipe:
        return recipe(args, saved, commit)
    for task in args.tasks.split(","):
        target, files, settings, candidates = TASKS[task]
        paths = [f"{k}={(args.data / v).resolve()}" for k, v in files.items()]
        rows, start = {}, time.time()
        for name, extra in candidates.items():
            run = args.runs / f"{task}_{name}"
            began = time.time()
            argv = [*paths, *settings, *SIZES, *COMMON, *extra, f"max_minutes={args.minutes}"]
            if transduce(["text", "train", *argv, "--run-dir", str(run)]):
                raise SystemExit(f"{task} {name}: training failed")
            metrics = [
                json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()
            ]
            key = "val_f1" if task == "wnut" else "val_accuracy"
            rows[name] = {
                "settings": [*(f"{k}=DATA/{v}" for k, v in files.items()), *argv[len(paths) :]],
                "validation": max(m[key] for m in metrics if key in m),
                "minutes": round((time.time() - began) / 60, 1),
            }
        chosen = max(rows, key=lambda n: rows[n]["validation"])  # before any test is read
        for name in rows:
            result = TextModel(args.runs / f"{task}_{name}").test()
            rows[name]["test"] = round(score(result), 2)
            if "entities" in result:
                rows[name]["test_entities"] = result["entities"]["micro"]
        saved[task] = {
            "target": target,
            "chosen": chosen,
            "test": rows[chosen]["test"],
            "reached": rows[chosen]["test"] >= target,
            "candidates": rows,
            "minutes": round((time.time() - start) / 60, 1),
            "command": f"python benchmarks/text/run.py --data DATA --tasks {task} "
            f"--minutes {args.minutes}",
            "commit": commit,
        }
        print(json.dumps(saved[task], indent=1), flush=True)
        args.out.write_text(json.dumps(saved, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
