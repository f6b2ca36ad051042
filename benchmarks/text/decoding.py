"""Entity taggers' validation F1 with their words' tags read three ways from the same
checkpoint: tag by tag (each word's highest-scoring tag), under BIO's rules (the best
sequence the scheme allows; see transduce.tasks.text.bio), and under BIO's rules with O's
log-probability raised by the bias the run chose on validation (``calibrate``, what
transduce does; the same as the second where the run chose 0 or predates it).

    python benchmarks/text/decoding.py --runs runs/bench/text

Reads every entity run in ``--runs`` that benchmarks/text/run.py trained (the ``wnut_*``
folders; masked-language-model pre-training runs are skipped) on its own validation file,
and writes benchmarks/text/decoding.json. Those checkpoints and biases were chosen by
validation F1 read the third way, which favours that reading.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

from transduce.api.text import TextModel  # noqa: E402
from transduce.tasks.text.data import read  # noqa: E402
from transduce.tasks.text.task import predict, scores  # noqa: E402


def three_readings(run: Path) -> dict:
    model = TextModel(run)
    path = model.cfg.valid
    encoded = model._encode(read(model.cfg, path), path)
    out = {}
    readings = (
        ("tag_by_tag", None, None),
        ("bio_rules", model._rules, None),
        ("bio_rules_calibrated", model._rules, model._outside),
    )
    for name, rules, outside in readings:
        predicted, _ = predict(model.model, encoded, rules=rules, outside=outside)
        micro = scores("entities", model.labels, encoded, predicted)["entities"]["micro"]
        out[name] = {k: round(micro[k], 2) for k in ("precision", "recall", "f1")}
        out[name]["predicted"] = micro["predicted"]
    out["outside_bias"] = model._outside.bias if model._outside else 0.0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "bench" / "text")
    parser.add_argument("--out", type=Path, default=HERE / "decoding.json")
    args = parser.parse_args()
    found = {}
    for run in sorted(args.runs.glob("wnut_*")):
        if run.is_dir() and not run.name.endswith("_pretrain"):
            found[run.name] = three_readings(run)
            print(run.name, found[run.name])
    if not found:
        raise SystemExit(f"{args.runs}: no wnut_* runs; run benchmarks/text/run.py --tasks wnut")
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    result = {
        "validation": "each run's valid file (WNUT-17 emerging.dev.conll)",
        "runs": found,
        "command": "python benchmarks/text/decoding.py --runs RUNS",
        "commit": commit,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
