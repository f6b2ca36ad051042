"""Whole process, start-up included: `transduce translate` of test_2016_flickr against the
script a CTranslate2 user writes (the one an export's README.md gives), both started cold.

    python benchmarks/speed/cold.py --data data/multi30k --run-dir runs/bench/en-de-2h

Each system is a fresh process reading the 1,000 sentences from a file and writing their
translations to one (beam 5, α 0.6 over length^α, the same threads). transduce runs at its
default batch, 12,000 source tokens × beam; CTranslate2 at 6,000, its fastest in run.py's
sweep on a Sapphire Rapids, or at ``--ct2-tokens`` where another was its fastest. The
rounds interleave the systems, and the median wall time of each counts.
transduce-bf16-early adds --early-exit (a sentence ends at the first step whose best
candidate is EOS). Also timed: the same commands on one sentence (start-up: imports,
loading, one search).
The export is written once before the rounds, at the quantization each CTranslate2 system
names. Results go to benchmarks/speed/cold.json and cold.md (``--out`` names another stem).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from plot import machine

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
SYSTEMS = ("transduce-bf16", "transduce-bf16-early", "transduce-int8", "ct2-int8")

# What a CTranslate2 user runs: SentencePiece + translate_batch, nothing of transduce.
CT2_SCRIPT = """
import sys, ctranslate2, sentencepiece as spm
model, source, target = sys.argv[1], sys.argv[2], sys.argv[3]
threads, tokens = int(sys.argv[4]), int(sys.argv[5])
sp = spm.SentencePieceProcessor(model_file=model + "/spm.model")
translator = ctranslate2.Translator(model, device="cpu", intra_threads=threads)
with open(source, encoding="utf-8") as f:
    pieces = [sp.encode(line.rstrip("\\n"), out_type=str) for line in f]
results = translator.translate_batch(
    pieces, beam_size=5, length_penalty=0.6, max_batch_size=tokens // 5, batch_type="tokens",
    max_decoding_length=max(len(p) for p in pieces) + 51,
)
with open(target, "w", encoding="utf-8") as f:
    f.writelines(sp.decode(r.hypotheses[0]) + "\\n" for r in results)
"""


def command(system: str, args, exports: dict, source: Path, target: Path) -> list[str]:
    if system.startswith("ct2"):
        model = exports[system.split("-")[1]]
        return [sys.executable, "-c", CT2_SCRIPT, str(model), str(source), str(target),
                str(args.threads), str(args.ct2_tokens)]  # fmt: skip
    transduce = str(Path(sys.executable).with_name("transduce"))
    return [
        transduce, "translate", args.run_dir, "--input", str(source), "--output", str(target),
        "--beam", "5", "--lenpen", "0.6", "--lenpen-style", "power",
        "--precision", system.split("-")[1], "--device", "cpu", "--threads", str(args.threads),
        *(["--early-exit"] if system.endswith("-early") else []),
    ]  # fmt: skip


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd[:3])}…: {done.stderr.strip().splitlines()[-1]}")
    return seconds


def measure(args) -> dict:
    from transduce.evaluation import corpus_scores
    from transduce.export.ctranslate2 import export_ctranslate2

    data = Path(args.data)
    sources = data / "test_2016_flickr.en"
    references = (data / "test_2016_flickr.de").read_text(encoding="utf-8").splitlines()
    systems = args.systems.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        one = tmp / "one.en"
        one.write_text(sources.read_text(encoding="utf-8").splitlines()[0] + "\n")
        exports = {
            q: export_ctranslate2(args.run_dir, tmp / f"ct2-{q}", q)
            for q in {s.split("-")[1] for s in systems if s.startswith("ct2")}
        }
        times = {s: {"all": [], "one": []} for s in systems}
        for _ in range(args.rounds):
            for system in systems:
                for kind, source in (("one", one), ("all", sources)):
                    target = tmp / f"{system}.{kind}.de"
                    times[system][kind].append(
                        timed(command(system, args, exports, source, target))
                    )
        rows = []
        for system in systems:
            hyps = (tmp / f"{system}.all.de").read_text(encoding="utf-8").splitlines()
            seconds = statistics.median(times[system]["all"])
            rows.append(
                {
                    "system": system,
                    "seconds": round(seconds, 2),
                    "sentences_per_s": round(len(references) / seconds, 1),
                    "one_sentence_seconds": round(statistics.median(times[system]["one"]), 2),
                    "bleu": corpus_scores(hyps, references)["bleu"],
                }
            )
    return {"machine": machine(), "rows": rows}


def summarise(results: dict) -> str:
    rows = results["rows"]
    base = next((r for r in rows if r["system"] == "ct2-int8"), rows[-1])
    s = results["settings"]
    tokens = s.get("ct2_tokens", 6000)
    lines = [
        f"`python benchmarks/speed/cold.py --threads {s['threads']} --rounds {s['rounds']}"
        f"{'' if tokens == 6000 else f' --ct2-tokens {tokens}'}` "
        f"on {results['machine']}: the median of {s['rounds']} interleaved cold starts.",
        "",
        f"| whole process, 1,000 sentences | seconds | sentences/s | vs {base['system']} "
        "| one sentence, s | BLEU |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['system']} | {r['seconds']:.2f} | {r['sentences_per_s']:.1f} | "
            f"{base['seconds'] / r['seconds']:.2f}× | {r['one_sentence_seconds']:.2f} | "
            f"{r['bleu']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="the multi30k folder")
    parser.add_argument("--run-dir", required=True, help="the trained run to translate with")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument(
        "--ct2-tokens",
        type=int,
        default=6000,
        help="CTranslate2's batch in source tokens × beam (its fastest in run.py's sweep)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "cold")
    args = parser.parse_args()
    results = measure(args)
    from transduce.io import recorded_path

    results["settings"] = {
        k: recorded_path(v, ROOT) if k in ("data", "run_dir") else v
        for k, v in vars(args).items()
        if k != "out"
    }
    Path(f"{args.out}.json").write_text(json.dumps(results, indent=1) + "\n")
    text = summarise(results)
    Path(f"{args.out}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
