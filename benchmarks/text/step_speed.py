"""A text run's training step, and what each of its speed-ups gains, step against step in
one process: every system takes its step on each batch in turn (the order rotating), so
each ratio compares two steps on the same batch a moment apart, whatever a drifting VM is
doing that minute.

    python benchmarks/text/step_speed.py --data ../shared/data --config configs/text_upos_xpos.yaml

The config's model and batches (by default the UPOS tagger's start: four pre-norm layers
of 256, letters, relative positions, 768 padded subwords a batch), fresh weights, the
step `transduce text train` takes (autocast forward, loss, backward, the gradient divided
by its units, clipping, AdamW). The systems:
  text                the step as the library takes it
  text-adamw-loop     AdamW a parameter at a time, as PyTorch does on a CPU unless fused
  text-list-batches   each batch filled row by row from Python lists (before a1de09f)
  text-unique-dim     the words' distinct spellings by torch.unique(dim=0) (before 178992e)
Per system: its median step in ms, and "text is": the median over batches of the ratio of
its step's time to text's on the same batch, with quartiles. Writes OUT.json and OUT.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))
SYSTEMS = ("text", "text-adamw-loop", "text-list-batches", "text-unique-dim")


def list_batch(encoded, rows, per_token: bool):
    """The batch as it was built before a1de09f: rows filled one by one from lists."""
    import torch

    from transduce.data.vocab import pad_batch
    from transduce.nn.chars import MAX_CHARS
    from transduce.tasks.text.data import IGNORE

    ids = pad_batch([encoded.ids[i] for i in rows], 0)
    chars = None
    if encoded.chars:
        chars = torch.zeros(*ids.shape, MAX_CHARS, dtype=torch.long)
        for row, i in enumerate(rows):
            chars[row, : len(encoded.chars[i])] = torch.tensor(encoded.chars[i])
    if not per_token:
        return ids, torch.tensor([encoded.labels[i] for i in rows]), chars
    tags = torch.full_like(ids, IGNORE)
    for row, i in enumerate(rows):
        tags[row, : len(encoded.labels[i])] = torch.tensor(encoded.labels[i])
    return ids, tags, chars


def unique_dim(ids):
    import torch

    return torch.unique(ids, dim=0, return_inverse=True)


def measure(args) -> dict:
    import logging

    import torch

    from transduce.config_files import load_config
    from transduce.device import autocast, resolve_precision
    from transduce.nn import chars as chars_module
    from transduce.tasks.text import task as text_task
    from transduce.tasks.text.config import TextConfig
    from transduce.tasks.text.data import load_text_data
    from transduce.training.schedule import adamw

    torch.set_num_threads(args.threads)
    data = Path(args.data) / "ud_ewt"
    files = [f"train={data / 'en_ewt-ud-train.conllu'}", f"valid={data / 'en_ewt-ud-dev.conllu'}"]
    cfg = load_config(TextConfig, args.config, files)
    cfg.validate("text config")
    device = torch.device("cpu")
    precision = resolve_precision(args.precision, device)
    with tempfile.TemporaryDirectory() as run_dir:
        found = load_text_data(cfg, run_dir, logging.getLogger("step_speed"))
    session = type("Session", (), {"device": device, "rank": 0, "world": 1})()
    task = text_task.TextTask(cfg, found, session)
    batches = [b for epoch in range(3) for b in task.batches(epoch)]
    batches = batches[: args.warmup_steps + args.steps]
    torch.manual_seed(cfg.engine.seed)
    first = task.build_model()
    systems = {}
    for name in SYSTEMS:
        model = task.build_model()
        model.load_state_dict(first.state_dict())
        params = list(model.parameters())
        if name == "text-adamw-loop":
            optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        else:
            optimizer = adamw(params, cfg.lr, cfg.weight_decay)
        systems[name] = (model.train(), params, optimizer)
    library_batch, library_rows = text_task.batch_of, chars_module.distinct_rows

    def step(name: str, batch) -> float:
        model, params, optimizer = systems[name]
        text_task.batch_of = list_batch if name == "text-list-batches" else library_batch
        chars_module.distinct_rows = unique_dim if name == "text-unique-dim" else library_rows
        start = time.perf_counter()
        with autocast(device, precision):
            loss, units = task.loss(model, batch)
        loss.backward()
        for p in params:
            if p.grad is not None:
                p.grad.mul_(1 / max(int(units), 1))
        torch.nn.utils.clip_grad_norm_(params, cfg.engine.clip_norm or float("inf"))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        seconds = time.perf_counter() - start
        text_task.batch_of, chars_module.distinct_rows = library_batch, library_rows
        return seconds

    times = {name: [] for name in SYSTEMS}
    for k, batch in enumerate(batches):
        order = SYSTEMS[k % len(SYSTEMS) :] + SYSTEMS[: k % len(SYSTEMS)]
        for name in order:
            seconds = step(name, batch)
            if k >= args.warmup_steps:
                times[name].append(seconds)
    rows = []
    for name in SYSTEMS:
        ratios = sorted(t / s for t, s in zip(times[name], times["text"]))
        quartiles = statistics.quantiles(ratios, n=4)
        rows.append(
            {
                "system": name,
                "median_step_ms": round(1000 * statistics.median(times[name]), 1),
                "text_is": round(statistics.median(ratios), 3),
                "quartiles": [round(quartiles[0], 3), round(quartiles[2], 3)],
            }
        )
    return {"precision": precision, "rows": rows}


def summarise(results: dict) -> str:
    s = results["settings"]
    lines = [
        f"`python benchmarks/text/step_speed.py --config {s['config']} --steps {s['steps']} "
        f"--threads {s['threads']}` at {results['commit']}, on {results['machine']}, "
        f"{results['precision']}: each system's step on the same {s['steps']} batches in "
        "turn, in one process.",
        "",
        "| system | median step, ms | text is | quartiles |",
        "|---|---:|---:|---:|",
    ]
    for r in results["rows"]:
        ratio = "" if r["system"] == "text" else f"{r['text_is']:.2f}×"
        quart = "" if r["system"] == "text" else "–".join(f"{q:.2f}" for q in r["quartiles"])
        lines.append(f"| {r['system']} | {r['median_step_ms']:.1f} | {ratio} | {quart} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="the folder holding ud_ewt/")
    parser.add_argument("--config", default="configs/text_upos_xpos.yaml")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup-steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--out", type=Path, default=HERE / "step_speed")
    args = parser.parse_args()
    results = measure(args)
    import subprocess

    sys.path.insert(0, str(ROOT / "benchmarks" / "speed"))
    from plot import machine

    results["machine"] = machine()
    results["commit"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    results["settings"] = {k: str(v) for k, v in vars(args).items() if k not in ("out", "data")}
    Path(f"{args.out}.json").write_text(json.dumps(results, indent=1) + "\n")
    text = summarise(results)
    Path(f"{args.out}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
