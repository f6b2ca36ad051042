"""Score a trained Multi30k run as the literature does, choosing everything on val.

    python benchmarks/multi30k/evaluate_run.py RUN_DIR --data data/multi30k \
        --pair en-de [--name tiny-70min]

Averages the last N step checkpoints (N from --last), translates val with beam 5 for each
length penalty and n-gram block of the grids, picks the setting of best tokenized
lowercased BLEU on val, then translates test_2016_flickr once with it. Writes cased
sacreBLEU, lowercased BLEU, chrF2, the literature's tokenized BLEU and the looping rate to
benchmarks/multi30k/results_runs.json under --name.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from transduce.api import load
from transduce.data.text import read_lines
from transduce.evaluation import corpus_scores, looping_rate
from transduce.io import write_text
from transduce.runs import average_checkpoints, save_checkpoint, step_checkpoints

HERE = Path(__file__).parent


def scores(translator, data: Path, split: str, src: str, tgt: str, lenpen: float, block: int):
    sources = read_lines(data / f"{split}.{src}")
    references = read_lines(data / f"{split}.{tgt}")
    official = data / "tok" / f"{split}.lc.norm.tok.{tgt}"
    start = time.perf_counter()
    hyps = [h[0][0] for h in translator.search(sources, 5, lenpen, no_repeat_ngram=block)]
    seconds = time.perf_counter() - start
    tokenized = read_lines(official) if official.is_file() else None
    return hyps, {**{k: v for k, v in corpus_scores(hyps, references, tgt, tokenized).items()
                     if not k.endswith("signature")},
                  "looping_rate": round(looping_rate(hyps, sources), 4),
                  "sentences_per_s": round(len(sources) / seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--pair", default="en-de")
    parser.add_argument("--name", required=True)
    parser.add_argument("--last", default="5,10")
    parser.add_argument("--lenpen", default="0.6,1.0")
    parser.add_argument("--no-repeat-ngram", default="0,3")
    args = parser.parse_args()
    src, tgt = args.pair.split("-")
    steps = step_checkpoints(args.run_dir)
    grid, best = [], None
    for last in [int(x) for x in args.last.split(",")]:
        path = args.run_dir / f"averaged_last{last}.pt"
        save_checkpoint(path, average_checkpoints(steps[-last:]))
        translator = load(path, verbose=False)
        for lenpen in [float(x) for x in args.lenpen.split(",")]:
            for block in [int(x) for x in args.no_repeat_ngram.split(",")]:
                _, val = scores(translator, args.data, "val", src, tgt, lenpen, block)
                row = {"last": last, "lenpen": lenpen, "no_repeat_ngram": block, **val}
                grid.append(row)
                print(json.dumps(row), flush=True)
                if best is None or val["bleu_tok"] > best["bleu_tok"]:
                    best = row
    translator = load(args.run_dir / f"averaged_last{best['last']}.pt", verbose=False)
    hyps, test = scores(translator, args.data, "test_2016_flickr", src, tgt, best["lenpen"],
                        best["no_repeat_ngram"])
    write_text(args.run_dir / f"test_2016_flickr.hyp.{tgt}", "".join(h + "\n" for h in hyps))
    results_path = HERE / "results_runs.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    results[args.name] = {"run": str(args.run_dir), "pair": args.pair,
                          "steps": int(steps[-1].stem.split("_")[1]),
                          "chosen_on_val": {k: best[k] for k in ("last", "lenpen",
                                                                 "no_repeat_ngram")},
                          "val_grid": grid, "test_2016_flickr": test}
    write_text(results_path, json.dumps(results, indent=2) + "\n")
    print(json.dumps({"chosen": results[args.name]["chosen_on_val"], "test": test}, indent=2))


if __name__ == "__main__":
    main()
