"""`transduce demo`: translate English number words into German with a small Transformer.

Trains through the engine like any other task (the output folder is a run directory: run it
again and it resumes, or reports at once if it had finished), then translates the fixed
held-out set with greedy search, reports exact match, and draws what the model learnt.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from transduce import runs
from transduce.data.numbers import english, german, german_tokens
from transduce.data.vocab import Vocab
from transduce.evaluation import exact_match
from transduce.io import write_text
from transduce.nn import Transformer, padding_mask, sinusoidal_table
from transduce.tasks.numbers.task import DemoConfig, NumbersTask, make_batch, translate
from transduce.training.engine_config import EXTENDABLE
from transduce.training.loss import smoothing_floor
from transduce.training.train import train_task
from transduce.viz import plot_attention, plot_positional_encoding
from transduce.viz.heatmaps import cut


@torch.no_grad()
def draw_cross_attention(model: Transformer, number: int, vocab: Vocab, path: Path) -> None:
    """Heatmaps of every decoder layer's and head's attention over the source, for one number,
    teacher-forced on the model's own translation (explicit attention path, float32)."""
    model.eval()
    device = next(model.parameters()).device
    src = make_batch([number], vocab)[0].to(device)
    hyp = translate(model, [number], vocab, device, "fp32")[0]
    try:
        produced = vocab.encode(german_tokens(hyp))
    except ValueError:  # the model wrote something that is not a number word
        produced = [vocab.eos_id]
    tgt_in = torch.tensor([[vocab.bos_id] + produced[:-1]], device=device)
    out = model.decode(
        tgt_in,
        model.encode(src, padding_mask(src, vocab.pad_id)),
        padding_mask(src, vocab.pad_id),
        need_weights=True,
    )
    weights = torch.stack([w[0] for w in out.cross_weights])  # (layers, H, T, S)
    plot_attention(
        weights.cpu(),
        [vocab.itos[i] for i in src[0].tolist()],
        [vocab.itos[i] for i in produced],
        path,
        title=f"cross-attention: {cut(english(number), 40)} → {cut(hyp, 40)}",
        axis_names=("source (English words)", "output (German morphemes)"),
    )


def run_demo(cfg: DemoConfig, out_dir: str | Path) -> float:
    """Train (or resume), then evaluate the checkpoint of best validation exact match on the
    held-out numbers, and draw; returns held-out exact match in [0, 1]."""
    out = Path(out_dir)
    start = time.perf_counter()

    def make_task(session, log) -> NumbersTask:
        task = NumbersTask(cfg, session)
        log.info(
            f"demo: {len(task.held_out)} held-out numbers, {len(task.valid)} validation numbers"
        )
        floor = smoothing_floor(cfg.label_smoothing, len(task.vocab))
        log.info(
            f"the loss levels off near {floor:.2f}, the least that label smoothing "
            f"{cfg.label_smoothing:g} over {len(task.vocab)} words allows; learning shows "
            f"in valid_exact_match, checked every {cfg.engine.valid_every} updates"
        )
        return task

    engine, _ = train_task(make_task, cfg, out, EXTENDABLE)
    task, model, session = engine.task, engine.model, engine.session
    log = logging.getLogger("transduce.train")
    # The held-out numbers are the test: score the checkpoint chosen on validation numbers.
    best = runs.load_checkpoint(runs.checkpoint_dir(out) / runs.BEST, task.kind)
    model.load_state_dict(best["model"])
    log.info(
        f"held-out evaluation with best.pt (step {best['step']}, {task.metric} {best['best']})"
    )
    vocab, held_out = task.vocab, task.held_out
    hyps = translate(model, held_out, vocab, session.device, session.precision)
    refs = [german(n) for n in held_out]
    accuracy = exact_match(hyps, refs)
    log.info(f"trained and evaluated in {time.perf_counter() - start:.1f}s")

    rows = [f"{n}\t{english(n)}\t{r}\t{h}\t{int(h == r)}" for n, r, h in zip(held_out, refs, hyps)]
    write_text(
        out / runs.TRANSLATIONS,
        "number\tenglish\treference\tmodel\tcorrect\n" + "\n".join(rows) + "\n",
    )
    example = next((n for n in held_out if n >= 1000 and n % 100 > 20 and n % 10), held_out[0])
    draw_cross_attention(model, example, vocab, out / runs.CROSS_ATTENTION_PLOT)
    plot_positional_encoding(sinusoidal_table(64, cfg.model.d_model), out / runs.POSITIONS_PLOT)

    lines = ["held-out translations (English → German):"]
    step = max(1, len(held_out) // max(cfg.examples, 1))
    for n, r, h in list(zip(held_out, refs, hyps))[::step][: cfg.examples]:
        lines.append(f"  {english(n)} → {h}" + ("" if h == r else f"   ✗ (expected {r})"))
    lines.append(
        f"wrote {out}/cross_attention.png, positional_encoding.png, "
        "translations.tsv, checkpoints/, train.log"
    )
    lines.append(f"exact match: {100 * accuracy:.1f}% ({len(held_out)} held-out numbers)")
    for line in lines:
        log.info(line, extra={"file_only": True})
    print("\n".join(lines))
    return accuracy
