"""Score a trained Multi30k run as the literature does, choosing everything on val.

    python benchmarks/multi30k/evaluate_run.py RUN_DIR --data data/multi30k \
        --pair en-de --name NAME [--last 5 8 10] [--lenpen 0.6 1.0 1.4] [--no-repeat-ngram 0 3]
    python benchmarks/multi30k/evaluate_run.py RUN_DIR RUN_DIR … --ensemble-dir DIR …

Runs `transduce tune` on the run (every combination of the numbers of averaged checkpoints,
length penalties and n-gram blocks, beam 5, best tokenized lowercased BLEU on val; it writes
RUN_DIR/averaged.pt and decoding.json), then translates test_2016_flickr once with that
choice. Writes cased sacreBLEU, lowercased BLEU, chrF2, the literature's tokenized BLEU and
the looping rate to benchmarks/multi30k/results_runs.json under --name. Several runs are
scored as one ensemble (`transduce tune RUN RUN … --out DIR`: each run tuned alone, then the
ensemble's α and block chosen on val), written to --ensemble-dir.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from transduce.api.loading import load
from transduce.data.text import read_lines
from transduce.evaluation import corpus_scores, looping_rate
from transduce.io import recorded_path, write_text
from transduce.runs import step_checkpoints
from transduce.tasks.translation.tune import Grid, tune, tune_ensemble

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, nargs="+")
    parser.add_argument(
        "--ensemble-dir", type=Path, help="with several runs: where the ensemble is written"
    )
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--pair", default="en-de")
    parser.add_argument("--name", required=True)
    parser.add_argument("--last", type=int, nargs="+", default=[5, 8, 10])
    parser.add_argument("--lenpen", type=float, nargs="+", default=[0.6, 1.0, 1.4])
    parser.add_argument("--no-repeat-ngram", type=int, nargs="+", default=[0, 3])
    args = parser.parse_args()
    src, tgt = args.pair.split("-")
    grid = Grid(
        tuple(args.last), tuple(args.lenpen), tuple(args.no_repeat_ngram), metric="bleu_tok"
    )
    if len(args.run_dir) > 1:
        if args.ensemble_dir is None:
            parser.error("several runs make an ensemble: give --ensemble-dir")
        chosen, rows = tune_ensemble(args.run_dir, args.ensemble_dir, grid)
        model_dir = args.ensemble_dir
    else:
        chosen, rows = tune(args.run_dir[0], grid)
        model_dir = args.run_dir[0]
    translator = load(model_dir, verbose=False)  # averaged.pt(s) and decoding.json
    sources = read_lines(args.data / f"test_2016_flickr.{src}")
    references = read_lines(args.data / f"test_2016_flickr.{tgt}")
    official = args.data / "tok" / f"test_2016_flickr.lc.norm.tok.{tgt}"
    start = time.perf_counter()
    hyps = translator.translate(sources)
    seconds = time.perf_counter() - start
    scores = corpus_scores(
        hyps, references, tgt, read_lines(official) if official.is_file() else None
    )
    test = {
        **{k: v for k, v in scores.items() if not k.endswith("signature")},
        "looping_rate": round(looping_rate(hyps, sources), 4),
        "sentences_per_s": round(len(sources) / seconds, 1),
    }
    write_text(model_dir / f"test_2016_flickr.hyp.{tgt}", "".join(h + "\n" for h in hyps))
    results_path = HERE / "results_runs.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    steps = [int(step_checkpoints(r)[-1].stem.split("_")[1]) for r in args.run_dir]
    entry = {
        "run": recorded_path(model_dir, ROOT),
        "pair": args.pair,
        "steps": steps[0],
        "chosen_on_val": {
            "last": chosen.last,
            "lenpen": chosen.lenpen,
            "no_repeat_ngram": chosen.no_repeat_ngram,
        },
        "val_grid": rows,
        "test_2016_flickr": test,
    }
    if len(args.run_dir) > 1:  # each member's own choice, and its steps
        entry["members"] = [
            {
                "run": recorded_path(r, ROOT),
                "steps": n,
                **{
                    k: v
                    for k, v in json.loads((r / "decoding.json").read_text()).items()
                    if k in ("last", "lenpen", "no_repeat_ngram", "bleu_tok")
                },
            }
            for r, n in zip(args.run_dir, steps)
        ]
        entry["steps"] = steps
    results[args.name] = entry
    write_text(results_path, json.dumps(results, indent=2) + "\n")
    print(json.dumps({"chosen": results[args.name]["chosen_on_val"], "test": test}, indent=2))


if __name__ == "__main__":
    main()
