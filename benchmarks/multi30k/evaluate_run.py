"""Score a trained Multi30k run as the literature does, choosing everything on val.

    python benchmarks/multi30k/evaluate_run.py RUN_DIR --data data/multi30k \
        --pair en-de --name NAME [--last 5 8 10] [--lenpen 0.6 1.0 1.4] [--no-repeat-ngram 0 3]

Runs `transduce tune` on the run (every combination of the numbers of averaged checkpoints,
length penalties and n-gram blocks, beam 5, best tokenized lowercased BLEU on val; it writes
RUN_DIR/averaged.pt and decoding.json), then translates test_2016_flickr once with that
choice. Writes cased sacreBLEU, lowercased BLEU, chrF2, the literature's tokenized BLEU and
the looping rate to benchmarks/multi30k/results_runs.json under --name.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from transduce.api import load
from transduce.data.text import read_lines
from transduce.decoding.tune import Grid, tune
from transduce.evaluation import corpus_scores, looping_rate
from transduce.io import recorded_path, write_text
from transduce.runs import step_checkpoints

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--pair", default="en-de")
    parser.add_argument("--name", required=True)
    parser.add_argument("--last", type=int, nargs="+", default=[5, 8, 10])
    parser.add_argument("--lenpen", type=float, nargs="+", default=[0.6, 1.0, 1.4])
    parser.add_argument("--no-repeat-ngram", type=int, nargs="+", default=[0, 3])
    args = parser.parse_args()
    src, tgt = args.pair.split("-")
    grid = Grid(tuple(args.last), tuple(args.lenpen), tuple(args.no_repeat_ngram),
                metric="bleu_tok")
    chosen, rows = tune(args.run_dir, grid)
    translator = load(args.run_dir, verbose=False)  # averaged.pt and decoding.json
    sources = read_lines(args.data / f"test_2016_flickr.{src}")
    references = read_lines(args.data / f"test_2016_flickr.{tgt}")
    official = args.data / "tok" / f"test_2016_flickr.lc.norm.tok.{tgt}"
    start = time.perf_counter()
    hyps = translator.translate(sources)
    seconds = time.perf_counter() - start
    scores = corpus_scores(hyps, references, tgt,
                           read_lines(official) if official.is_file() else None)
    test = {**{k: v for k, v in scores.items() if not k.endswith("signature")},
            "looping_rate": round(looping_rate(hyps, sources), 4),
            "sentences_per_s": round(len(sources) / seconds, 1)}
    write_text(args.run_dir / f"test_2016_flickr.hyp.{tgt}", "".join(h + "\n" for h in hyps))
    results_path = HERE / "results_runs.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    results[args.name] = {"run": recorded_path(args.run_dir, ROOT), "pair": args.pair,
                          "steps": int(step_checkpoints(args.run_dir)[-1].stem.split("_")[1]),
                          "chosen_on_val": {"last": chosen.last, "lenpen": chosen.lenpen,
                                            "no_repeat_ngram": chosen.no_repeat_ngram},
                          "val_grid": rows, "test_2016_flickr": test}
    write_text(results_path, json.dumps(results, indent=2) + "\n")
    print(json.dumps({"chosen": results[args.name]["chosen_on_val"], "test": test}, indent=2))


if __name__ == "__main__":
    main()
