"""Speed of transduce against the toolkits people use, side by side on this machine.

    python benchmarks/speed/run.py --data data/multi30k --run-dir runs/bench/en-de-2h

Every measurement runs in its own subprocess (so peak RSS is its own), one after another,
on the same batches, with the same thread count. The run directory supplies the trained
weights (for translation) and the tokenizer; training speed uses fresh models of
``--config`` (by default the best En→De recipe, configs/multi30k_en_de_2h.yaml, dropout
included: it costs time on a CPU). Results go to benchmarks/speed/results.json, results.md
and results.png (``--out`` names another stem).

Training (target tokens/s, median over steps after warm-up; at 4,096-token batches the
systems take turns ``--rounds`` times, each round a process, and the median round counts):
  transduce      our model and training step (bf16 autocast where fast)
  torch          nn.Transformer + embeddings + output layer + F.cross_entropy, same autocast
  marian         Hugging Face MarianMTModel of the same sizes, random init, same loss
Every transduce system keeps freed memory in the process, as ``transduce train`` does on a
CPU; marian-retained (asked for by --train-systems) is Marian with that setting too.
Translation of test_2016_flickr (beam 5), sentences/s, target tokens/s, latency p50/p95.
Sentences/s is the first pass over the 1,000 sentences after a 20-sentence warm-up; warm
sentences/s the median of ``--passes`` passes more (oneDNN builds a kernel the first time
it meets a matrix shape, about a millisecond each, and a pass meets hundreds):
  transduce-fp32, transduce-bf16, transduce-bf16-early (beam search ends a sentence at
  the first step whose best candidate is EOS), transduce-int8, transduce-int8-early (the
  fastest path where bfloat16 is emulated: no AVX-512 BF16 or AMX), transduce-fp32-early,
  transduce-fp32-mkl (fp32 on MKL's sgemm, layers unpacked, as before), marian-generate (our
  weights), ct2-float32, ct2-int8 (on a GPU also ct2-float16 and ct2-int8_float16, which
  CTranslate2 offers there). The peers are built in peers.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from peers import MarianTranslator
from plot import machine, plot
from speed_tables import summarise
from train_speed import CONFIG, in_turns, measure_training, peak_rss_mb

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
TRAIN_SYSTEMS = ("transduce", "torch", "marian")
# Ablations: our model with the plain output layer + loss over every position, and with
# PyTorch's F.dropout in place of transduce.nn.dropout's cheaper CPU mask.
ABLATIONS = ("transduce-unfused", "transduce-torch-dropout")
# and, asked for by --train-systems, train_speed.COMPILED: the unfused one through torch.compile,
# and train_speed.MARIAN_RETAINED
TRANSLATE_SYSTEMS = ("transduce-fp32", "transduce-bf16", "transduce-bf16-early", "transduce-int8")
TRANSLATE_SYSTEMS += ("transduce-int8-early", "marian-generate", "ct2-float32", "ct2-int8")
TRANSLATE_SYSTEMS += ("transduce-fp32-early", "transduce-fp32-mkl")


# the settings of each half, kept with its figures when the other half is measured again
HALF_SETTINGS = {
    "translation": (
        "translate_systems",
        "translate_sizes",
        "passes",
        "latency_sentences",
        "run_dir",
    ),
    "training": ("train_systems", "train_sizes", "steps", "warmup_steps", "rounds"),
}
# the systems also measured at the other batch sizes: float32, our fastest paths (with early
# exit) and the fastest peer, so that each is compared where it is fastest
SWEPT = ("transduce-fp32", "transduce-bf16-early", "transduce-fp32-early", "ct2-int8")


# ----------------------------------------------------------------------------- translation
def make_translator(args, system: str, workdir: Path):
    """Something with .search(lines, beam, alpha) → [[(text, score)]]."""
    from transduce.api.loading import load as load_translator
    from transduce.nn.packed import unpack_linears

    if system.startswith("transduce"):
        translator = load_translator(args.run_dir, args.device, system.split("-")[1])
        if system.endswith("-mkl"):
            unpack_linears(translator.model)  # done sentences then leave a batch at once
        return translator
    if system.startswith("ct2"):
        from transduce.export import ctranslate2 as ct2

        out, kind = workdir / system, system.split("-")[1]
        # a GPU's compute types (float16, int8_float16) CTranslate2 makes at load time from
        # the float32 or int8 export
        ours = kind in ct2.QUANTIZATIONS
        made_from = kind if ours else ("int8" if kind.startswith("int8") else "float32")
        ct2.export_ctranslate2(args.run_dir, out, made_from)
        return ct2.CTranslate2Translator(
            model_dir=out,
            device=args.device,
            threads=args.threads,
            compute_type="default" if ours else kind,
        )
    if system == "marian-generate":
        return MarianTranslator(load_translator(args.run_dir, args.device, "fp32"))
    raise ValueError(system)


def measure_translation(args, system: str, max_tokens: int) -> dict:
    from transduce.data.text import read_lines
    from transduce.evaluation import corpus_scores

    sources = read_lines(Path(args.data) / "test_2016_flickr.en")
    references = read_lines(Path(args.data) / "test_2016_flickr.de")
    with tempfile.TemporaryDirectory() as tmp:
        translator = make_translator(args, system, Path(tmp))
        # Every engine scores by log-probability / length^α (the only form CTranslate2 and
        # generate offer), so that all of them search for the same translations.
        style = {"lenpen_style": "power"}
        if system.endswith("-early"):
            style["early_exit"] = True
        translator.search(sources[:20], args.beam, args.lenpen, **style)  # warm-up
        start = time.perf_counter()
        hyps = [
            h[0][0]
            for h in translator.search(
                sources, args.beam, args.lenpen, max_tokens=max_tokens, **style
            )
        ]
        seconds = time.perf_counter() - start
        again = []
        for _ in range(args.passes):  # the same sentences again: every shape met before
            start = time.perf_counter()
            translator.search(sources, args.beam, args.lenpen, max_tokens=max_tokens, **style)
            again.append(time.perf_counter() - start)
        latencies = []
        if max_tokens == args.translate_tokens:
            for line in sources[: args.latency_sentences]:
                start = time.perf_counter()
                translator.search([line], args.beam, args.lenpen, **style)
                latencies.append(1000 * (time.perf_counter() - start))
    target_tokens = sum(len(t) + 1 for t in translator.tokenizer.encode(hyps))
    result = {
        "system": system,
        "max_tokens": max_tokens,
        "sentences_per_s": round(len(sources) / seconds, 1),
        "target_tokens_per_s": round(target_tokens / seconds),
        "warm_sentences_per_s": round(len(sources) / statistics.median(again), 1)
        if again
        else None,
        "bleu": corpus_scores(hyps, references)["bleu"],
        "peak_rss_mb": peak_rss_mb(),
    }
    if latencies:
        q = statistics.quantiles(latencies, n=20)
        result.update(
            latency_p50_ms=round(statistics.median(latencies), 1), latency_p95_ms=round(q[18], 1)
        )
    return result


# ----------------------------------------------------------------------------- driver
def child(args) -> None:
    import torch

    torch.set_num_threads(args.threads)
    if args.device == "cuda" and args.no_cudnn_attention:  # for every system alike
        torch.backends.cuda.enable_cudnn_sdp(False)
    kind, system, max_tokens = args.child.split(":")
    measure = measure_training if kind == "train" else measure_translation
    print(json.dumps(measure(args, system, int(max_tokens))))


def run_child(args, job: str) -> dict:
    command = [
        sys.executable,
        __file__,
        "--child",
        job,
        "--data",
        args.data,
        "--run-dir",
        args.run_dir,
        "--config",
        args.config,
        "--threads",
        str(args.threads),
        "--steps",
        str(args.steps),
        "--warmup-steps",
        str(args.warmup_steps),
        "--beam",
        str(args.beam),
        "--lenpen",
        str(args.lenpen),
        "--precision",
        args.precision,
        "--translate-tokens",
        str(args.translate_tokens),
        "--latency-sentences",
        str(args.latency_sentences),
        "--passes",
        str(args.passes),
        "--device",
        args.device,
        *(["--no-cudnn-attention"] if args.no_cudnn_attention else []),
    ]
    print(f"[{time.strftime('%H:%M:%S')}] {job}", file=sys.stderr, flush=True)
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": str(args.threads)},
    )
    if done.returncode != 0:  # a system that cannot run this model: recorded, the rest go on
        result = skipped(job, done.stderr)
        print(json.dumps(result), file=sys.stderr, flush=True)
        return result
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(result), file=sys.stderr, flush=True)
    return result


def skipped(job: str, stderr: str) -> dict:
    """The record of a measurement that failed: its system and batch size, and why (the
    last line of its error, e.g. Marian refusing a pre-norm model)."""
    _, system, max_tokens = job.split(":")
    said = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return {"system": system, "max_tokens": int(max_tokens), "skipped": (said or ["?"])[-1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="folder with the Multi30k raw files (required to measure)")
    parser.add_argument("--run-dir", help="a trained Multi30k En→De run (required to measure)")
    parser.add_argument("--config", default=str(CONFIG), help="the config measured in training")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where all run")
    parser.add_argument(
        "--no-cudnn-attention",
        action="store_true",
        help="cuda: turn PyTorch's cuDNN attention off for every system, the peers too",
    )
    parser.add_argument("--steps", type=int, default=12, help="measured training steps")
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3, help="turns at 4,096 tokens")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--lenpen", type=float, default=0.6)
    parser.add_argument("--precision", default="auto", choices=["auto", "bf16", "fp32"])
    parser.add_argument(
        "--translate-tokens",
        type=int,
        default=6000,
        help="translation batch size in source tokens × beam",
    )
    parser.add_argument("--latency-sentences", type=int, default=100)
    parser.add_argument(
        "--passes",
        type=int,
        default=2,
        help="translate the 1,000 sentences again this many times for the warm figure",
    )
    parser.add_argument("--train-sizes", default="1024,2048,4096,8192")
    parser.add_argument("--translate-sizes", default="1500,3000,6000,12000")
    parser.add_argument(
        "--only",
        choices=["train", "translate"],
        help="measure one half again, keeping the other's figures from the results file",
    )
    parser.add_argument("--train-systems", default=",".join(TRAIN_SYSTEMS + ABLATIONS))
    parser.add_argument("--translate-systems", default=",".join(TRANSLATE_SYSTEMS))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(HERE / "results"), help="results path stem")
    parser.add_argument(
        "--replot",
        action="store_true",
        help="only redraw results.md and results.png from results.json",
    )
    args = parser.parse_args()
    if args.child:
        return child(args)
    out = Path(args.out)
    if args.replot:
        results = json.loads(out.with_suffix(".json").read_text())
        out.with_suffix(".md").write_text(summarise(results))
        if results["training"] and results["translation"]:
            plot(results, out.with_suffix(".png"))
        return None
    if not (args.data and args.run_dir):
        parser.error("--data and --run-dir are required to measure")
    from transduce.io import recorded_path

    results = {
        "settings": {
            k: recorded_path(v, ROOT) if k in ("data", "run_dir", "config") else v
            for k, v in vars(args).items()
            if k not in ("child", "only", "out", "replot")
        },
        "machine": machine(args.device),
        "training": [],
        "translation": [],
    }
    if args.only != "translate":
        systems = args.train_systems.split(",")
        turns = [[run_child(args, f"train:{s}:4096") for s in systems] for _ in range(args.rounds)]
        results["training"] += [in_turns([t[k] for t in turns]) for k in range(len(systems))]
        for size in map(int, args.train_sizes.split(",")):
            if size != 4096:
                results["training"].append(run_child(args, f"train:transduce:{size}"))
    if args.only != "train":
        for system in args.translate_systems.split(","):
            results["translation"].append(
                run_child(args, f"translate:{system}:{args.translate_tokens}")
            )
        swept = [s for s in SWEPT if s in args.translate_systems.split(",")]
        for size in map(int, args.translate_sizes.split(",")):
            if size != args.translate_tokens:
                for system in swept:
                    results["translation"].append(run_child(args, f"translate:{system}:{size}"))
    if args.only and out.with_suffix(".json").exists():  # keep the other half's figures
        other = "translation" if args.only == "train" else "training"
        kept = json.loads(out.with_suffix(".json").read_text())
        results[other] = kept[other]
        for key in HALF_SETTINGS[other]:  # the settings the kept half ran with
            results["settings"][key] = kept["settings"].get(key)
    out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    out.with_suffix(".md").write_text(summarise(results))  # one half: its table alone
    if results["training"] and results["translation"]:
        plot(results, out.with_suffix(".png"))
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
