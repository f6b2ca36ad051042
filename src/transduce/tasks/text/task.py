"""`transduce text train`: the encoder on its own, a head on it, trained by the engine on
labelled sentences or tagged words; validation accuracy (classify, tag) or entity F1
(entities) chooses the checkpoint."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import torch
from torch import Tensor
from torch.nn import functional as F
from torch.optim.lr_scheduler import LambdaLR

from transduce.data.vocab import pad_batch
from transduce.evaluation.entities import entity_scores
from transduce.nn.encoder_only import EncoderOnly, build_encoder_only
from transduce.tasks.text.config import EXTENDABLE, TextConfig
from transduce.tasks.text.data import IGNORE, Encoded, TextData, load_text_data
from transduce.training.distributed import Session
from transduce.training.train import train_task


def build_text_model(cfg: TextConfig, vocab: int, labels: int) -> EncoderOnly:
    model = dataclasses.replace(cfg.model, src_vocab_size=vocab, pad_id=0)
    return build_encoder_only(model, labels, cfg.task != "classify", cfg.pooling)


def batch_of(encoded: Encoded, rows, per_token: bool) -> tuple[Tensor, Tensor]:
    """(B, L) ids padded with 0, and (B,) labels or (B, L) tags (padding ``IGNORE``)."""
    ids = pad_batch([encoded.ids[i] for i in rows], 0)
    if not per_token:
        return ids, torch.tensor([encoded.labels[i] for i in rows])
    tags = torch.full_like(ids, IGNORE)
    for row, i in enumerate(rows):
        tags[row, : len(encoded.labels[i])] = torch.tensor(encoded.labels[i])
    return ids, tags


@torch.no_grad()
def predict(model: EncoderOnly, encoded: Encoded, batch_size: int = 128) -> list:
    """Per sentence, its label index, or its words' tag indices (read at first subwords);
    and the label probabilities of each sentence (classify only)."""
    model.eval()
    device = next(model.parameters()).device
    out, probabilities = [], []
    for start in range(0, len(encoded.ids), batch_size):
        rows = range(start, min(start + batch_size, len(encoded.ids)))
        ids, tags = batch_of(encoded, rows, model.per_token)
        logits = model(ids.to(device)).logits.float().cpu()
        if not model.per_token:
            probabilities += logits.softmax(-1).tolist()
            out += logits.argmax(-1).tolist()
            continue
        best = logits.argmax(-1)
        for row in range(len(rows)):
            first = tags[row] != IGNORE  # each word's first subword
            out.append(best[row][first].tolist())
    return out, probabilities


def scores(task: str, labels: list[str], encoded: Encoded, predicted: list) -> dict:
    """accuracy (%) of sentence labels or word tags; for ``entities`` also entity-level
    precision, recall and F1 (micro, and per type)."""
    if task == "classify":
        right = sum(p == t for p, t in zip(predicted, encoded.labels))
        return {"accuracy": 100 * right / len(predicted), "sentences": len(predicted)}
    truth = [[labels[t] for t in tags if t != IGNORE] for tags in encoded.labels]
    guess = [[labels[t] for t in tags] for tags in predicted]
    words = sum(len(t) for t in truth)
    right = sum(a == b for t, g in zip(truth, guess) for a, b in zip(t, g))
    found = {"accuracy": 100 * right / words, "words": words, "sentences": len(truth)}
    if task == "entities":
        found["entities"] = entity_scores(truth, guess)
    return found


class TextTask:
    """Shuffled batches of sentences, cross-entropy of their labels (or of each word's tag
    at its first subword), AdamW with a linear warm-up; validation accuracy, or for
    ``entities`` the entity F1, chooses the checkpoint."""

    kind, higher_is_better, unit = "text", True, "sentences"

    def __init__(self, cfg: TextConfig, data: TextData, session: Session) -> None:
        self.cfg, self.data, self.session = cfg, data, session
        self.metric = "val_f1" if cfg.task == "entities" else "val_accuracy"

    def build_model(self):
        return build_text_model(self.cfg, len(self.data.tokenizer), len(self.data.labels))

    def build_optimizer(self, model):
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay
        )
        warmup = max(1, self.cfg.warmup)
        return optimizer, LambdaLR(optimizer, lambda k: min(1.0, (k + 1) / warmup))

    def batches(self, epoch: int) -> list[Tensor]:
        order = torch.Generator().manual_seed(self.cfg.engine.seed * 1000 + epoch)
        n = len(self.data.train.ids)
        return list(torch.randperm(n, generator=order).split(self.cfg.batch_size))

    def loss(self, model, batch: Tensor) -> tuple[Tensor, int]:
        per_token = self.cfg.task != "classify"
        ids, target = batch_of(self.data.train, batch.tolist(), per_token)
        device = self.session.device
        logits = model(ids.to(device)).logits.float()
        target = target.to(device)
        loss = F.cross_entropy(
            logits.flatten(0, -2),
            target.flatten(),
            ignore_index=IGNORE,
            reduction="sum",
            label_smoothing=self.cfg.label_smoothing,
        )
        return loss, int((target != IGNORE).sum())

    def validate(self, model) -> dict:
        predicted, _ = predict(model, self.data.valid)
        found = scores(self.cfg.task, self.data.labels, self.data.valid, predicted)
        out = {"val_accuracy": round(found["accuracy"], 4)}
        if "entities" in found:
            out["val_f1"] = round(found["entities"]["micro"]["f1"], 4)
        return out

    def record(self) -> dict:
        return {
            "model_config": dataclasses.asdict(self.cfg),
            "tokenizer": self.data.tokenizer.fingerprint,
            "extra": {"labels": list(self.data.labels)},
        }


def train_text(cfg: TextConfig, run_dir: str | Path) -> dict:
    """Train (or resume) a text run; returns its last validation metrics and the best."""
    cfg.validate("text config")

    def make_task(session, log) -> TextTask:
        return TextTask(cfg, load_text_data(cfg, run_dir, log), session)

    engine, metrics = train_task(make_task, cfg, run_dir, EXTENDABLE)
    logging.getLogger("transduce.train").debug(f"best {engine.task.metric} {engine.best}")
    return {**metrics, "best": engine.best, "metric": engine.task.metric}
