"""`transduce demo`: translate English number words into German with a small Transformer.

Trains on numbers sampled afresh every step (never the held-out ones), then translates the
fixed held-out set with greedy search, reports exact match, and draws what the model learnt.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from transduce.data.numbers import (ENGLISH_WORDS, GERMAN_MORPHEMES, english, english_tokens,
                                    german, german_morphemes, german_tokens, held_out_numbers,
                                    sample_numbers)
from transduce.data.vocab import Vocab, pad_batch
from transduce.decoding import greedy_search
from transduce.device import autocast, pick_device, resolve_precision
from transduce.evaluation import exact_match
from transduce.io import atomic_path, write_text
from transduce.logs import progress, setup_logging
from transduce.nn import Transformer, build_transformer, padding_mask, preset, sinusoidal_table
from transduce.training import LabelSmoothedCrossEntropy, paper_adam, warmup_schedule
from transduce.viz import plot_attention, plot_positional_encoding

MAX_OUTPUT = 24  # the longest German number below a million has 11 morphemes


@dataclass(frozen=True)
class DemoConfig:
    """Settings of `transduce demo`; each can be overridden as key=value.

    Dropout is off by default: every step sees fresh numbers, so there is nothing to overfit.
    """

    steps: int = 2000
    batch_size: int = 128
    d_model: int = 128
    d_ff: int = 256
    num_heads: int = 4
    num_layers: int = 2
    dropout: float = 0.0
    label_smoothing: float = 0.1
    warmup: int = 400
    lr_factor: float = 1.0
    held_out: int = 1000
    seed: int = 0
    precision: str = "auto"
    device: str = "auto"
    threads: int = 0
    examples: int = 6


def numbers_vocab() -> Vocab:
    """One joint vocabulary, so source, target and output embeddings are tied (§3.4)."""
    return Vocab(list(ENGLISH_WORDS) + list(GERMAN_MORPHEMES))


def make_batch(numbers: list[int], vocab: Vocab) -> tuple[Tensor, Tensor]:
    """Source ids (B, S) ending in EOS; target ids (B, T + 1) framed by BOS and EOS."""
    src = pad_batch([vocab.encode(english_tokens(english(n))) for n in numbers], vocab.pad_id)
    tgt = pad_batch([vocab.encode(german_morphemes(n), bos=True) for n in numbers],
                    vocab.pad_id)
    return src, tgt


def build_model(cfg: DemoConfig, vocab: Vocab) -> Transformer:
    return build_transformer(preset(
        "tiny", len(vocab), d_model=cfg.d_model, d_ff=cfg.d_ff, num_heads=cfg.num_heads,
        num_encoder_layers=cfg.num_layers, num_decoder_layers=cfg.num_layers,
        dropout=cfg.dropout, pad_id=vocab.pad_id, max_len=64))


def train(model: Transformer, cfg: DemoConfig, vocab: Vocab, held_out: list[int],
          device: torch.device, precision: str, log) -> None:
    """The paper's recipe: label smoothing, Adam(0.9, 0.98, 1e-9), warm-up then 1/√step."""
    rng, exclude = random.Random(cfg.seed), set(held_out)
    optimizer = paper_adam(model.parameters())
    schedule = warmup_schedule(optimizer, cfg.d_model, cfg.warmup, cfg.lr_factor)
    loss_fn = LabelSmoothedCrossEntropy(cfg.label_smoothing, vocab.pad_id)
    model.train()
    tokens, start = 0, time.perf_counter()
    with progress(cfg.steps, "training", "step") as bar:
        for step in range(1, cfg.steps + 1):
            src, tgt = (t.to(device) for t in make_batch(
                sample_numbers(rng, cfg.batch_size, exclude), vocab))
            with autocast(device, precision):
                logits = model(src, tgt[:, :-1], padding_mask(src, vocab.pad_id))
                loss = loss_fn(logits, tgt[:, 1:])
            value = loss.item()
            if not math.isfinite(value):
                raise RuntimeError(f"loss became {value} at step {step}; "
                                   "lower lr_factor or raise warmup")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            tokens += int((tgt[:, 1:] != vocab.pad_id).sum())
            rate = tokens / (time.perf_counter() - start)
            bar.update()
            bar.set_postfix(loss=f"{value:.3f}", tok_s=f"{rate:,.0f}", refresh=False)
            if step % 200 == 0 or step == cfg.steps:
                log.info(f"step {step}/{cfg.steps} loss {value:.4f} "
                         f"lr {schedule.get_last_lr()[0]:.2e} target tokens/s {rate:,.0f}")


@torch.no_grad()
def translate(model: Transformer, numbers: list[int], vocab: Vocab, device: torch.device,
              precision: str, batch_size: int = 500) -> list[str]:
    """German words for ``numbers`` by greedy search."""
    model.eval()
    words = []
    for i in range(0, len(numbers), batch_size):
        src, _ = make_batch(numbers[i:i + batch_size], vocab)
        src = src.to(device)
        with autocast(device, precision):
            out = greedy_search(model, src, padding_mask(src, vocab.pad_id), vocab.bos_id,
                                vocab.eos_id, vocab.pad_id, MAX_OUTPUT)
        words += ["".join(vocab.decode(row.tolist())) for row in out]
    return words


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
    out = model.decode(tgt_in, model.encode(src, padding_mask(src, vocab.pad_id)),
                       padding_mask(src, vocab.pad_id), need_weights=True)
    weights = torch.stack([w[0] for w in out.cross_weights])  # (layers, H, T, S)
    plot_attention(weights.cpu(), [vocab.itos[i] for i in src[0].tolist()],
                   [vocab.itos[i] for i in produced], path,
                   title=f"cross-attention: {english(number)} → {hyp}")


def run_demo(cfg: DemoConfig, out_dir: str | Path) -> float:
    """Train, evaluate and draw; returns held-out exact match in [0, 1]."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = setup_logging(out, "demo")
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    device = pick_device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    torch.manual_seed(cfg.seed)
    vocab, held_out = numbers_vocab(), held_out_numbers(cfg.held_out)
    model = build_model(cfg, vocab).to(device)
    params = sum(p.numel() for p in model.parameters())
    log.info(f"demo: {params:,} parameters, {device.type}, {precision}, "
             f"{torch.get_num_threads()} threads; {len(held_out)} held-out numbers")
    start = time.perf_counter()
    train(model, cfg, vocab, held_out, device, precision, log)
    hyps = translate(model, held_out, vocab, device, precision)
    refs = [german(n) for n in held_out]
    accuracy = exact_match(hyps, refs)
    log.info(f"trained and evaluated in {time.perf_counter() - start:.1f}s")

    rows = [f"{n}\t{english(n)}\t{r}\t{h}\t{int(h == r)}"
            for n, r, h in zip(held_out, refs, hyps)]
    write_text(out / "translations.tsv", "number\tenglish\treference\tmodel\tcorrect\n"
               + "\n".join(rows) + "\n")
    with atomic_path(out / "model.pt") as tmp:
        torch.save({"config": dataclasses.asdict(cfg), "model": model.state_dict()}, tmp)
    example = next((n for n in held_out if n >= 1000 and n % 100 > 20 and n % 10), held_out[0])
    draw_cross_attention(model, example, vocab, out / "cross_attention.png")
    plot_positional_encoding(sinusoidal_table(64, cfg.d_model), out / "positional_encoding.png")

    lines = ["held-out translations (English → German):"]
    step = max(1, len(held_out) // max(cfg.examples, 1))
    for n, r, h in list(zip(held_out, refs, hyps))[::step][: cfg.examples]:
        lines.append(f"  {english(n)} → {h}" + ("" if h == r else f"   ✗ (expected {r})"))
    lines.append(f"wrote {out}/cross_attention.png, positional_encoding.png, "
                 "translations.tsv, model.pt, demo.log")
    lines.append(f"exact match: {100 * accuracy:.1f}% ({len(held_out)} held-out numbers)")
    for line in lines:
        log.info(line, extra={"file_only": True})
    print("\n".join(lines))
    return accuracy
