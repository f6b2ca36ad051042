"""Multi30k benchmark: train with a shipped config, average, translate test_2016_flickr with
beam search, score, and write the figures to benchmarks/multi30k/results.json.

    python benchmarks/multi30k/run.py en-de --data data/multi30k [key=value ...]

Published reference (test_2016_flickr En→De, lowercased tokenized BLEU): 41.02, fairseq
transformer_tiny, beam 5, average of the last 10 checkpoints (Wu et al., ACL 2021).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from transduce.api.loading import load as load_translator
from transduce.cli.main import main as transduce
from transduce.config_files import load_config
from transduce.data.text import read_lines
from transduce.evaluation import corpus_scores, looping_rate
from transduce.io import write_text
from transduce.runs import average_checkpoints, load_checkpoint, save_checkpoint, step_checkpoints
from transduce.tasks.translation.config import TrainConfig

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def run(
    pair: str,
    data: str,
    overrides: list[str],
    run_dir: Path,
    last: int,
    beam: int,
    lenpen: float,
    also_at: list[float],
    tune: tuple[list[int], list[float]] | None,
    config: Path | None = None,
) -> dict:
    src, tgt = pair.split("-")
    config = config or ROOT / "configs" / f"multi30k_{src}_{tgt}.yaml"
    overrides = [f"src_lang={src}", f"tgt_lang={tgt}", *overrides]  # a config of another pair
    if also_at and load_config(TrainConfig, config, overrides).engine.cooldown:
        raise SystemExit(
            "--also-at: with a cooldown the rate follows the run's own budget, so "
            "its early checkpoints are not a shorter run's; drop one of the two"
        )
    start = time.perf_counter()
    if (
        transduce(["train", str(config), f"data_dir={data}", *overrides, "--run-dir", str(run_dir)])
        != 0
    ):
        raise SystemExit("training failed")
    wall = time.perf_counter() - start
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    rates = [r["tokens_per_s"] for r in records if "tokens_per_s" in r]
    transduce(["average", str(run_dir), "--last", str(last)])
    state = load_checkpoint(run_dir / "averaged.pt")
    params = sum(
        v.numel()
        for k, v in state["model"].items()
        if k not in ("tgt_embed.embedding.weight", "generator.weight")
    )  # tied
    pair_files = (data, src, tgt)
    result = {
        "pair": pair,
        "test": "test_2016_flickr",
        **score(
            run_dir / "averaged.pt",
            *pair_files,
            beam,
            lenpen,
            run_dir / f"test_2016_flickr.hyp.{tgt}",
        ),
        "beam": beam,
        "lenpen": lenpen,
        "averaged_checkpoints": last,
        "training_seconds": records[-1]["elapsed_s"],
        "wall_seconds": round(wall),
        "steps": records[-1]["step"],
        "epochs": records[-1]["epoch"],
        "train_tokens_per_s": round(statistics.median(rates)) if rates else None,
        "parameters": params,
        "overrides": overrides,
    }
    if tune:
        result["tuned_on_val"] = tuned(
            step_checkpoints(run_dir), run_dir, "final", pair_files, beam, *tune
        )
    # Without a cooldown the schedule does not depend on the run's length, so the checkpoints
    # written in the first M training minutes are those a run with max_minutes=M writes.
    elapsed = {r["step"]: r["elapsed_s"] for r in records if "valid_bleu" in r}
    for minutes in also_at:
        early = [
            p
            for p in step_checkpoints(run_dir)
            if elapsed.get(int(p.stem.split("_")[1]), 1e18) <= 60 * minutes
        ]
        steps = early[-last:]
        if len(early) < max([last, *(tune[0] if tune else [])]):
            raise SystemExit(
                f"--also-at {minutes}: only {len(early)} checkpoints that early; raise keep_last"
            )
        path = run_dir / f"averaged_{minutes:g}min.pt"
        save_checkpoint(path, average_checkpoints(steps))
        result[f"at_{minutes:g}_minutes"] = {
            **score(
                path,
                *pair_files,
                beam,
                lenpen,
                run_dir / f"test_2016_flickr.{minutes:g}min.hyp.{tgt}",
            ),
            "averaged": [p.name for p in steps],
            "training_seconds": elapsed[int(steps[-1].stem.split("_")[1])],
        }
        if tune:
            result[f"at_{minutes:g}_minutes"]["tuned_on_val"] = tuned(
                early, run_dir, f"{minutes:g}min", pair_files, beam, *tune
            )
    return result


def tuned(
    checkpoints: list[Path],
    run_dir: Path,
    name: str,
    pair_files: tuple,
    beam: int,
    lasts: list[int],
    lenpens: list[float],
) -> dict:
    """Choose how many of the last ``checkpoints`` to average and α by cased BLEU on val
    (the corpus's tuning set), then score that choice on test."""
    data, src, tgt = pair_files
    sources = read_lines(Path(data) / f"val.{src}")
    references = read_lines(Path(data) / f"val.{tgt}")
    grid, best = [], None
    for n in lasts:
        path = run_dir / f"averaged_{name}_last{n}.pt"
        save_checkpoint(path, average_checkpoints(checkpoints[-n:]))
        translator = load_translator(path)
        for alpha in lenpens:
            hyps = [h[0][0] for h in translator.search(sources, beam_size=beam, alpha=alpha)]
            bleu = corpus_scores(hyps, references)["bleu"]
            grid.append({"last": n, "lenpen": alpha, "val_bleu": bleu})
            print(f"[{name}] val: last {n}, lenpen {alpha}: BLEU {bleu}", flush=True)
            if best is None or bleu > best["val_bleu"]:
                best = grid[-1]
    path = run_dir / f"averaged_{name}_last{best['last']}.pt"
    return {
        **score(
            path,
            data,
            src,
            tgt,
            beam,
            best["lenpen"],
            run_dir / f"test_2016_flickr.{name}.tuned.hyp.{tgt}",
        ),
        "chosen": best,
        "val_grid": grid,
        "averaged": [p.name for p in checkpoints[-best["last"] :]],
    }


def score(
    checkpoint: Path, data: str, src: str, tgt: str, beam: int, lenpen: float, output: Path
) -> dict:
    """Translate test_2016_flickr with ``checkpoint``; scores and speed."""
    translator = load_translator(checkpoint)
    sources = read_lines(Path(data) / f"test_2016_flickr.{src}")
    references = read_lines(Path(data) / f"test_2016_flickr.{tgt}")
    start = time.perf_counter()
    hyps = [h[0][0] for h in translator.search(sources, beam_size=beam, alpha=lenpen)]
    seconds = time.perf_counter() - start
    write_text(output, "".join(h + "\n" for h in hyps))
    official = Path(data) / "tok" / f"test_2016_flickr.lc.norm.tok.{tgt}"
    tokenized = read_lines(official) if official.is_file() else None
    return {
        **corpus_scores(hyps, references, tgt, tokenized),
        "looping_rate": round(looping_rate(hyps, sources), 4),
        "translate_sentences_per_s": round(len(sources) / seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pair", choices=["en-de", "de-en", "en-fr"])
    parser.add_argument("overrides", nargs="*", help="config key=value")
    parser.add_argument("--data", required=True, help="folder with the Multi30k raw files")
    parser.add_argument("--run-dir", help="default runs/bench/PAIR[-NAME]")
    parser.add_argument(
        "--config",
        type=Path,
        help="default configs/multi30k_SRC_TGT.yaml; another pair's config "
        "trains this pair (e.g. the 2-hour recipe for De→En)",
    )
    parser.add_argument("--name", help="results key suffix, e.g. 2h (default: none)")
    parser.add_argument("--last", type=int, default=5, help="checkpoints to average")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--lenpen", type=float, default=0.6)
    parser.add_argument(
        "--also-at",
        type=float,
        action="append",
        default=[],
        metavar="MINUTES",
        help="also score the average of the last checkpoints written within "
        "MINUTES of training (keep_last must keep them)",
    )
    parser.add_argument(
        "--tune",
        action="store_true",
        help="also choose the number of averaged checkpoints and α on val "
        "(grids --tune-last, --tune-lenpen) and score that choice on test",
    )
    parser.add_argument("--tune-last", default="5,8,10")
    parser.add_argument("--tune-lenpen", default="0.6,1.0,1.4")
    parser.add_argument("--results", default=str(HERE / "results.json"))
    args = parser.parse_intermixed_args()
    run_dir = Path(
        args.run_dir
        or ROOT / "runs" / "bench" / (args.pair + ("-" + args.name if args.name else ""))
    )
    tune = (
        (
            [int(n) for n in args.tune_last.split(",")],
            [float(a) for a in args.tune_lenpen.split(",")],
        )
        if args.tune
        else None
    )
    result = run(
        args.pair,
        args.data,
        args.overrides,
        run_dir,
        args.last,
        args.beam,
        args.lenpen,
        args.also_at,
        tune,
        args.config,
    )
    path = Path(args.results)
    table = json.loads(path.read_text()) if path.exists() else {}
    table[args.pair + ("-" + args.name if args.name else "")] = result
    write_text(path, json.dumps(table, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
