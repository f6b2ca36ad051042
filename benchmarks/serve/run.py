"""Load on `transduce serve`: one client alone against 20 concurrent clients.

    python benchmarks/serve/run.py RUN_DIR [--clients 20] [--requests 50] [--beam 5]

Starts a real server on 127.0.0.1 (with --threads), checks every answer against the model's
own translation of that sentence, and writes sentences/s and p50/p95 latency of both
settings to benchmarks/serve/results.json and results.md. Requests hold one sentence each
(English numbers for a demo run, else lines of --sentences FILE).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import transduce
from transduce.io import recorded_path
from transduce.serve.load import run_load

HERE = Path(__file__).resolve().parent


def start(run: str, port: int, threads: int) -> subprocess.Popen:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "transduce",
            "serve",
            run,
            "--port",
            str(port),
            "--threads",
            str(threads),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--sentences", help="a file of sentences (default: English numbers)")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=50, help="per client")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()

    if args.sentences:
        sentences = Path(args.sentences).read_text(encoding="utf-8").splitlines()[:1000]
    else:
        from transduce.data.numbers import english

        sentences = [english(n) for n in range(123_000, 124_000, 7)]
    model = transduce.load(args.run, verbose=False)
    expected = dict(zip(sentences, model.translate(sentences, beam=args.beam)))
    del model
    url = f"http://127.0.0.1:{args.port}/"
    server = start(args.run, args.port, args.threads)
    try:
        run_load(url, sentences[:20], expected, 2, 10, args.beam)  # warm-up
        alone = run_load(
            url, sentences, expected, 1, args.clients * args.requests // 4, args.beam, timeout=1800
        )
        together = run_load(
            url, sentences, expected, args.clients, args.requests, args.beam, timeout=1800
        )
    finally:
        server.terminate()
        server.wait()
    rows = {"one client": alone.summary(), f"{args.clients} clients": together.summary()}
    speedup = together.sentences_per_s / alone.sentences_per_s
    run = recorded_path(args.run, HERE.parents[1])
    result = {
        "run": run,
        "beam": args.beam,
        "threads": args.threads,
        "machine": f"{platform.processor() or platform.machine()}",
        "results": rows,
        "concurrent_speedup": round(speedup, 2),
    }
    (HERE / "results.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# transduce serve under load",
        "",
        f"`python benchmarks/serve/run.py {run} --beam {args.beam}` on 127.0.0.1; "
        "every request is one sentence, every answer checked against the model's own "
        "translation of it.",
        "",
        "| clients | requests | errors | mixed up | sentences/s | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows.values():
        lines.append(
            f"| {row['clients']} | {row['requests']} | {row['errors']} | "
            f"{row['mixed_up']} | {row['sentences_per_s']} | {row['latency_p50_ms']} "
            f"| {row['latency_p95_ms']} |"
        )
    lines += [
        "",
        f"Concurrent clients batched together: {speedup:.1f}× the sentences per "
        "second of one client alone.",
    ]
    (HERE / "results.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
