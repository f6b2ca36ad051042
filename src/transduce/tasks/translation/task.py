"""`transduce train`: a translation model on parallel text, as a task of the engine."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from torch import Tensor

from transduce.data.batching import collate, count_tokens, token_batches
from transduce.nn import build_transformer, padding_mask
from transduce.tasks.translation.config import TrainConfig
from transduce.tasks.translation.data import RunData, load_run_data, read_corpora
from transduce.tasks.translation.validate import validate
from transduce.training.distributed import Session
from transduce.training.engine_config import EXTENDABLE
from transduce.training.loss import linear_label_smoothed_ce
from transduce.training.schedule import paper_adam, schedule_for
from transduce.training.train import train_task


def summed_loss(model, src: Tensor, tgt: Tensor, pad_id: int, epsilon: float) -> Tensor:
    """The label-smoothed loss summed over a batch's target tokens (teacher forcing).

    Args: src (B, S) ids + EOS; tgt (B, T + 2) BOS … EOS, padded with ``pad_id``.
    The output layer and the loss see non-padding positions only.
    """
    gold = tgt[:, 1:]
    keep = gold != pad_id
    hidden = model.features(src, tgt[:, :-1], padding_mask(src, pad_id))  # (B, T + 1, D)
    return linear_label_smoothed_ce(hidden[keep], model.generator.weight, gold[keep], epsilon)


class TranslationTask:
    """Token-batched parallel text, the label-smoothed loss, the paper's Adam and schedule,
    validation by greedy BLEU on the validation set."""

    kind, metric, higher_is_better, unit = "translation", "valid_bleu", True, "tokens"

    def __init__(self, cfg: TrainConfig, data: RunData, session: Session) -> None:
        self.cfg, self.data, self.session = cfg, data, session
        tok = data.tokenizer
        self.model_config = cfg.model_config(len(tok), tok.pad_id)
        self.src, self.tgt = data.train_src, data.train_tgt  # this epoch's segmentation
        self.dropout_corpora = None  # source and target split in words once, for BPE-dropout

    def epoch_seed(self, epoch: int) -> int:
        """The seed of an epoch's draws: the run's seed and the epoch alone, so every process
        and a resumed run draw alike."""
        return self.cfg.engine.seed * 100_003 + epoch

    def segment(self, epoch: int) -> tuple[list[list[int]], list[list[int]]]:
        """The training pairs as ids for ``epoch``: the tokenizer's own segmentation, or with
        ``bpe_dropout`` a new one drawn from the seed and the epoch (source and target with
        different draws). A pair that the draw makes longer than ``max_len`` keeps its
        plain segmentation, so the epoch trains on the same pairs as every other."""
        d, p = self.data, self.cfg.bpe_dropout
        if not p:
            return d.train_src, d.train_tgt
        if self.dropout_corpora is None:
            self.dropout_corpora = (
                d.tokenizer.dropout_corpus(d.train_src_text),
                d.tokenizer.dropout_corpus(d.train_tgt_text),
            )
        seed = self.epoch_seed(epoch) * 2
        src = self.dropout_corpora[0].draw(p, seed)
        tgt = self.dropout_corpora[1].draw(p, seed + 1)
        fits = [len(s) <= self.cfg.max_len and len(t) <= self.cfg.max_len for s, t in zip(src, tgt)]
        return (
            [s if ok else plain for s, plain, ok in zip(src, d.train_src, fits)],
            [t if ok else plain for t, plain, ok in zip(tgt, d.train_tgt, fits)],
        )

    def build_model(self):
        return build_transformer(self.model_config)

    def build_optimizer(self, model):
        c = self.cfg
        optimizer = paper_adam(model.parameters(), c.weight_decay)
        return optimizer, schedule_for(optimizer, c.schedule, c.model.d_model, c.warmup, c.lr)

    def batches(self, epoch: int) -> list[list[int]]:
        """Sentence indices by token budget, shuffled by seed and epoch alone."""
        self.src, self.tgt = self.segment(epoch)
        lengths = [max(len(s), len(t)) + 2 for s, t in zip(self.src, self.tgt)]
        rng = random.Random(self.epoch_seed(epoch))
        return token_batches(lengths, self.cfg.max_tokens, rng)

    def loss(self, model, batch: list[int]) -> tuple[Tensor, int]:
        tok = self.data.tokenizer
        src, tgt = collate(
            [self.src[i] for i in batch],
            [self.tgt[i] for i in batch],
            tok.pad_id,
            tok.bos_id,
            tok.eos_id,
        )
        src, tgt = src.to(self.session.device), tgt.to(self.session.device)
        loss = summed_loss(model, src, tgt, tok.pad_id, self.cfg.label_smoothing)
        return loss, count_tokens(tgt[:, 1:], tok.pad_id)

    def validate(self, model) -> dict:
        return validate(model, self.data, self.session.device, self.session.precision)

    def record(self) -> dict:
        return {
            "model_config": dataclasses.asdict(self.model_config),
            "tokenizer": self.data.tokenizer.fingerprint,
        }


def train(cfg: TrainConfig, run_dir: str | Path) -> dict:
    """Train (or resume) a run; returns the metrics of its last validation."""
    corpora = read_corpora(cfg)  # bad input fails here, before anything is written

    def make_task(session: Session, log) -> TranslationTask:
        if not session.is_main:  # rank 0 trains the tokenizer; the others then read it
            session.barrier()
        data = load_run_data(cfg, corpora, Path(run_dir), log, may_train=session.is_main)
        if session.is_main:
            session.barrier()
        return TranslationTask(cfg, data, session)

    return train_task(make_task, cfg, run_dir, EXTENDABLE)[1]
