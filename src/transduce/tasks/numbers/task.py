"""The demo's task: English number words → German, on numbers sampled afresh every epoch."""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass

import torch
from torch import Tensor

from transduce.checks import at_least, in_range
from transduce.data.batching import count_tokens
from transduce.data.numbers import (
    NumbersTokenizer,
    english,
    english_tokens,
    german,
    german_morphemes,
    held_out_numbers,
    sample_numbers,
)
from transduce.data.vocab import Vocab, pad_batch
from transduce.decoding import greedy_search
from transduce.device import autocast
from transduce.evaluation import exact_match
from transduce.nn import TransformerConfig, build_transformer, padding_mask
from transduce.training.distributed import Session
from transduce.training.engine_config import EngineConfig
from transduce.training.loss import LabelSmoothedCrossEntropy
from transduce.training.schedule import paper_adam, warmup_schedule

MAX_OUTPUT = 24  # the longest German number below a million has 11 morphemes
BATCHES_PER_EPOCH = 100  # an "epoch" of freshly sampled numbers, so runs resume exactly


@dataclass(frozen=True, kw_only=True)
class DemoConfig:
    """Settings of `transduce demo`; each can be overridden as key=value.

    ``model`` is the library's TransformerConfig (2+2 layers, d_model 128; its vocabulary
    comes from the task), ``engine`` the training engine's (2000 updates by default).
    Dropout is off: every step sees fresh numbers, so there is nothing to overfit.

    The rate is half the paper's schedule and falls linearly to zero over the second half
    of the updates (``lr_factor`` 0.5, ``cooldown`` 0.5): at the full rate without the
    cool-down, validation exact match fell from 99% to 48% mid-run and the last checkpoint
    could be far worse than the best (benchmarks/demo/README.md).
    """

    model: TransformerConfig = TransformerConfig(
        d_model=128,
        d_ff=256,
        num_heads=4,
        num_encoder_layers=2,
        num_decoder_layers=2,
        dropout=0.0,
        max_len=64,
    )
    engine: EngineConfig = EngineConfig(
        max_steps=2000, valid_every=250, clip_norm=1.0, keep_last=2, log_every=200, cooldown=0.5
    )
    batch_size: int = 128
    label_smoothing: float = 0.1
    warmup: int = 400
    lr_factor: float = 0.5
    held_out: int = 1000
    valid_numbers: int = 1000
    examples: int = 6

    KIND = "numbers"  # the kind of model its runs' checkpoints hold

    PATH_KEYS = ()
    HELP = {
        "batch_size": "numbers per batch, drawn afresh at every update",
        "label_smoothing": "label smoothing ε of the loss (§5.4)",
        "warmup": "warm-up updates of the paper's learning-rate schedule (§5.3)",
        "lr_factor": "multiplies the paper's learning-rate schedule",
        "held_out": "numbers held out from training and scored at the end",
        "valid_numbers": "other numbers that validation scores while training",
        "examples": "held-out translations printed at the end",
    }

    def problems(self) -> list[tuple[str, str]]:
        """(key, what is wrong) for values no run can use."""
        found = at_least(self, 1, "batch_size", "held_out", "valid_numbers", "warmup")
        found += at_least(self, 0, "examples")
        found += in_range(self, "label_smoothing", 0, 1)
        if not 0 < self.lr_factor < math.inf:
            found.append(
                ("lr_factor", f"lr_factor must be a positive number, not {self.lr_factor}")
            )
        return found + self.model.problems() + self.engine.problems()


def numbers_vocab() -> Vocab:
    """One joint vocabulary, so source, target and output embeddings are tied (§3.4)."""
    return NumbersTokenizer().vocab


def make_batch(numbers: list[int], vocab: Vocab) -> tuple[Tensor, Tensor]:
    """Source ids (B, S) ending in EOS; target ids (B, T + 2) framed by BOS and EOS."""
    src = pad_batch([vocab.encode(english_tokens(english(n))) for n in numbers], vocab.pad_id)
    tgt = pad_batch([vocab.encode(german_morphemes(n), bos=True) for n in numbers], vocab.pad_id)
    return src, tgt


@torch.no_grad()
def translate(
    model,
    numbers: list[int],
    vocab: Vocab,
    device: torch.device,
    precision: str,
    batch_size: int = 500,
) -> list[str]:
    """German words for ``numbers`` by greedy search."""
    model.eval()
    words = []
    for i in range(0, len(numbers), batch_size):
        src, _ = make_batch(numbers[i : i + batch_size], vocab)
        src = src.to(device)
        with autocast(device, precision):
            out = greedy_search(
                model,
                src,
                padding_mask(src, vocab.pad_id),
                vocab.bos_id,
                vocab.eos_id,
                vocab.pad_id,
                MAX_OUTPUT,
            )
        words += ["".join(vocab.decode(row.tolist())) for row in out]
    return words


class NumbersTask:
    """Fresh numbers every batch (never a held-out or validation one), the paper's loss,
    Adam and warm-up; validation by exact match on numbers apart from the held-out set."""

    kind, metric, higher_is_better, unit = "numbers", "valid_exact_match", True, "tokens"

    def __init__(self, cfg: DemoConfig, session: Session) -> None:
        self.cfg, self.session, self.vocab = cfg, session, numbers_vocab()
        self.held_out = held_out_numbers(cfg.held_out)
        self.valid = [
            n for n in held_out_numbers(cfg.valid_numbers, seed=2018) if n not in set(self.held_out)
        ]
        self.exclude = set(self.held_out) | set(self.valid)
        self.loss_fn = LabelSmoothedCrossEntropy(cfg.label_smoothing, self.vocab.pad_id, "sum")
        self.model_config = dataclasses.replace(
            cfg.model, src_vocab_size=len(self.vocab), pad_id=self.vocab.pad_id
        )

    def build_model(self):
        return build_transformer(self.model_config)

    def build_optimizer(self, model):
        optimizer = paper_adam(model.parameters())
        c = self.cfg
        return optimizer, warmup_schedule(optimizer, c.model.d_model, c.warmup, c.lr_factor)

    def batches(self, epoch: int) -> list[list[int]]:
        rng = random.Random(self.cfg.engine.seed * 100_003 + epoch)
        return [
            sample_numbers(rng, self.cfg.batch_size, self.exclude) for _ in range(BATCHES_PER_EPOCH)
        ]

    def loss(self, model, batch: list[int]) -> tuple[Tensor, int]:
        src, tgt = (t.to(self.session.device) for t in make_batch(batch, self.vocab))
        # Plain logits: with 67 classes the chunked loss of translation saves nothing.
        logits = model(src, tgt[:, :-1], padding_mask(src, self.vocab.pad_id))
        return self.loss_fn(logits, tgt[:, 1:]), count_tokens(tgt[:, 1:], self.vocab.pad_id)

    def validate(self, model) -> dict:
        hyps = translate(model, self.valid, self.vocab, self.session.device, self.session.precision)
        return {"valid_exact_match": round(exact_match(hyps, [german(n) for n in self.valid]), 4)}

    def record(self) -> dict:
        return {"model_config": dataclasses.asdict(self.model_config)}
