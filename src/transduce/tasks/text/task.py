"""`transduce text train`: the encoder on its own, a head on it, trained by the engine on
labelled sentences or tagged words; validation accuracy (classify, tag) or entity F1
(entities) chooses the checkpoint."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import torch
from torch import Tensor
from torch.nn import functional as F
from torch.nn.utils.rnn import pad_sequence
from torch.optim.lr_scheduler import LambdaLR

from transduce import runs
from transduce.data.batching import token_batches
from transduce.errors import UserError
from transduce.evaluation.entities import entity_scores
from transduce.nn.encoder_only import EncoderEnsemble, EncoderOnly, build_encoder_only
from transduce.tasks.text.bio import Rules, best_allowed, scheme_rules, training_rules
from transduce.tasks.text.config import EXTENDABLE, MASK, TextConfig
from transduce.tasks.text.data import IGNORE, Encoded, TextData, load_text_data
from transduce.training.distributed import Session
from transduce.training.schedule import adamw
from transduce.training.train import train_task


def build_text_model(cfg: TextConfig, vocab: int, labels: int) -> EncoderOnly | EncoderEnsemble:
    """The encoder and the task's head: a label a sentence, a tag a token, or for ``mlm``
    a subword a token; with ``members`` > 1, an ensemble of such encoders."""
    model = dataclasses.replace(cfg.model, src_vocab_size=vocab, pad_id=0)
    outputs = vocab if cfg.task == "mlm" else labels
    per_token = cfg.task != "classify"
    made = [
        build_encoder_only(
            model, outputs, per_token, cfg.pooling, chars=cfg.chars, relative=cfg.relative
        )
        for _ in range(cfg.members)
    ]
    return made[0] if cfg.members == 1 else EncoderEnsemble(made)


def masked(ids: Tensor, share: float, mask_id: int, vocab: int, seed: int):
    """BERT's corruption of ``ids`` (B, L): ``share`` of the real subwords after BOS are
    chosen; of those 80% become ``mask_id``, 10% another subword, 10% stay. Returns the
    corrupted ids and the targets (the chosen positions' ids, ``IGNORE`` elsewhere)."""
    generator = torch.Generator().manual_seed(seed)
    real = ids >= 3  # not padding (0), BOS (1) or EOS (2); unk (3) is a target too
    real[:, 0] = False  # BOS: the sentence's own token
    chosen = (torch.rand(ids.shape, generator=generator) < share) & real
    targets = torch.where(chosen, ids, torch.full_like(ids, IGNORE))
    draw = torch.rand(ids.shape, generator=generator)
    corrupted = ids.clone()
    corrupted[chosen & (draw < 0.8)] = mask_id
    swap = chosen & (draw >= 0.8) & (draw < 0.9)
    corrupted[swap] = torch.randint(4, vocab, ids.shape, generator=generator)[swap]
    return corrupted, targets


def load_init(model: EncoderOnly | EncoderEnsemble, init: str) -> EncoderOnly | EncoderEnsemble:
    """``model`` with the encoder, embeddings and positions of the pre-trained run
    ``init``: a masked language model, or a classifier or tagger of other labels (its
    head is left out; a character model the pre-trained run lacks starts afresh, as do
    relative positions); every member of an ensemble starts from them, each with a head
    of its own."""
    path = runs.checkpoint_dir(init) / runs.BEST
    state = runs.load_checkpoint(path, "text")
    if any(k.startswith("members.") for k in state["model"]):
        raise UserError(
            f"{path}: the pre-trained run is an ensemble (members > 1), whose encoders "
            "differ; start from a run of one encoder"
        )
    weights = {k: v for k, v in state["model"].items() if not k.startswith("head.")}
    for member in getattr(model, "members", [model]):
        _load_encoder(member, weights, state, path)
    return model


def _load_encoder(model: EncoderOnly, weights: dict, state: dict, path: Path) -> None:
    try:
        missing, unexpected = model.load_state_dict(weights, strict=False)
    except RuntimeError:  # a tensor of another shape
        missing, unexpected = [], ["(sizes)"]
    lacking = sorted({k.split(".")[0] for k in unexpected} & {"chars", "relative"})
    if lacking:  # parts the pre-trained run has and this run's settings leave out
        had = state.get("model_config", {})
        wanted = " ".join(f"{name}={had.get(name, '?')}" for name in lacking)
        raise UserError(f"{path}: the pre-trained run has {' and '.join(lacking)}; give {wanted}")
    if unexpected or any(not k.startswith(("head.", "chars.", "relative.")) for k in missing):
        raise UserError(
            f"{path}: its encoder does not fit this run's model (other sizes?); give the "
            "pre-trained run's model settings"
        )


def batch_of(encoded: Encoded, rows, per_token: bool) -> tuple[Tensor, Tensor, Tensor | None]:
    """(B, L) ids padded with 0; (B,) labels or (B, L) tags (padding ``IGNORE``); and
    the (B, L, C) character ids of each token's word, or None if not encoded. A
    sentence's tags and characters are as long as its ids."""
    made = encoded.tensors()
    ids = pad_sequence([made.ids[i] for i in rows], batch_first=True)
    chars = None
    if encoded.chars:
        chars = pad_sequence([made.chars[i] for i in rows], batch_first=True)
    if not per_token:
        return ids, torch.tensor([encoded.labels[i] for i in rows]), chars
    tags = pad_sequence([made.tags[i] for i in rows], batch_first=True, padding_value=IGNORE)
    return ids, tags, chars


def _to(chars: Tensor | None, device) -> Tensor | None:
    return None if chars is None else chars.to(device)


@torch.no_grad()
def predict(
    model: EncoderOnly,
    encoded: Encoded,
    batch_size: int = 128,
    rules: Rules | None = None,
    outside: Outside | None = None,
) -> list:
    """Per sentence, its label index, or its words' tag indices (read where each is learned;
    with an entity scheme's ``rules``, the best sequence they allow, :mod:`.bio`; with
    ``outside``, O's log-probability raised by its bias first); and the label probabilities
    of each sentence (classify only)."""
    if model.per_token:
        return [word_tags(s, rules, outside) for s in word_scores(model, encoded, batch_size)], []
    model.eval()
    device = next(model.parameters()).device
    out, probabilities = [0] * len(encoded.ids), [[]] * len(encoded.ids)
    for rows in by_length(encoded, batch_size):
        ids, _, chars = batch_of(encoded, rows, False)
        logits = model(ids.to(device), chars=_to(chars, device)).logits.float().cpu()
        for row, p, best in zip(rows, logits.softmax(-1).tolist(), logits.argmax(-1).tolist()):
            out[row], probabilities[row] = best, p
    return out, probabilities


def by_length(encoded: Encoded, batch_size: int) -> list[list[int]]:
    """The sentences' indices in batches of ``batch_size`` neighbours by length, so that a
    batch is padded little (in file order, a batch of EWT's sentences is mostly padding);
    the callers put each result back at its sentence's place."""
    order = sorted(range(len(encoded.ids)), key=lambda i: len(encoded.ids[i]))
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


@torch.no_grad()
def word_scores(model: EncoderOnly, encoded: Encoded, batch_size: int = 128) -> list[Tensor]:
    """A tagger's scores (words, tags) of each sentence, each word's at the subword its tag
    is read at."""
    model.eval()
    device = next(model.parameters()).device
    out: list[Tensor] = [torch.empty(0)] * len(encoded.ids)
    for rows in by_length(encoded, batch_size):
        ids, tags, chars = batch_of(encoded, rows, True)
        logits = model(ids.to(device), chars=_to(chars, device)).logits.float().cpu()
        for row, i in enumerate(rows):
            out[i] = logits[row][tags[row] != IGNORE]
    return out


@dataclasses.dataclass(frozen=True)
class Outside:
    """A number added to the log-probability of the tag outside every entity (``index``,
    O's) before an entity tagger's words are decoded: above 0 it finds fewer entities and
    surer ones. Chosen on the validation sentences (:meth:`TextTask.validate`)."""

    index: int
    bias: float


# the biases a validation tries, 0 first: a tie keeps the one tried first
OUTSIDE_BIASES = (0.0, 0.5, -0.5, 1.0, -1.0, 1.5, 2.0, 3.0)


def word_tags(scores: Tensor, rules: Rules | None, outside: Outside | None = None) -> list[int]:
    """Each word's tag index from its scores (words, tags): the highest, or with an entity
    scheme's ``rules`` the sequence of highest summed log-probability they allow; with
    ``outside``, after O's log-probability is raised by its bias."""
    if rules is None and outside is None:
        return scores.argmax(-1).tolist()
    log_probs = scores.log_softmax(-1)
    if outside is not None and outside.bias:
        log_probs[:, outside.index] += outside.bias
    return log_probs.argmax(-1).tolist() if rules is None else best_allowed(log_probs, rules)


def entity_rules(cfg: TextConfig, labels: list[str], kept: bool = True) -> Rules | None:
    """The rules an entity tagger's words are decoded under, if its training tags ``kept``
    them (:func:`.bio.training_rules`); None for the other tasks."""
    return scheme_rules(labels) if cfg.task == "entities" and kept else None


def scores(task: str, labels: list[str], encoded: Encoded, predicted: list) -> dict:
    """accuracy (%) of sentence labels or of every word's tag; for ``entities`` also
    entity-level precision, recall and F1 (micro, and per type)."""
    if task == "classify":
        right = sum(p == t for p, t in zip(predicted, encoded.labels))
        return {"accuracy": 100 * right / len(predicted), "sentences": len(predicted)}
    # every word of the file is scored: one past max_tokens (never read) counts as "O",
    # or as the first label where there is no "O"
    missing = labels.index("O") if "O" in labels else 0
    truth = [[labels[t] for t in tags] for tags in encoded.gold]
    guess = [
        [labels[t] for t in tags] + [labels[missing]] * (len(gold) - len(tags))
        for tags, gold in zip(predicted, encoded.gold)
    ]
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
        self.weights = None  # per label, in the loss: O's is outside_weight
        if cfg.outside_weight != 1 and "O" in data.labels:
            self.weights = torch.ones(len(data.labels), device=session.device)
            self.weights[data.labels.index("O")] = cfg.outside_weight
        self.rules = None  # an entity tagger's, if its training tags keep their scheme
        self.outside_bias = 0.0  # chosen at each validation of a calibrated entity tagger
        if cfg.task == "entities":
            self.rules = training_rules(data.labels, data.train.gold)

    def build_model(self):
        model = build_text_model(self.cfg, len(self.data.tokenizer), len(self.data.labels))
        return load_init(model, self.cfg.init) if self.cfg.init else model

    def build_optimizer(self, model):
        optimizer = adamw(model.parameters(), self.cfg.lr, self.cfg.weight_decay)
        warmup = max(1, self.cfg.warmup)
        return optimizer, LambdaLR(optimizer, lambda k: min(1.0, (k + 1) / warmup))

    def batches(self, epoch: int) -> list[Tensor]:
        """The epoch's batches of training sentences, by seed and epoch alone: batch_size
        drawn at random, or with ``batch_tokens`` sentences of similar length up to that
        many padded subwords a batch (far less padding: a random batch of EWT's sentences
        is two thirds padding), in shuffled order."""
        seed = self.cfg.engine.seed * 1000 + epoch
        if self.cfg.batch_tokens:
            lengths = [len(ids) for ids in self.data.train.ids]
            found = token_batches(lengths, self.cfg.batch_tokens, random.Random(seed))
            return [torch.tensor(batch) for batch in found]
        order = torch.Generator().manual_seed(seed)
        n = len(self.data.train.ids)
        return list(torch.randperm(n, generator=order).split(self.cfg.batch_size))

    def loss(self, model, batch: Tensor) -> tuple[Tensor, int]:
        per_token = self.cfg.task in ("tag", "entities")
        ids, target, chars = batch_of(self.data.train, batch.tolist(), per_token)
        seed = int((batch.long() * 2654435761 % 2**31).sum()) + len(batch)
        if self.cfg.task == "mlm":  # a mask of its own for each batch drawn
            ids, target = self.corrupt(ids, seed)
        elif self.cfg.token_dropout > 0:
            draw = torch.rand(ids.shape, generator=torch.Generator().manual_seed(seed))
            hide = (draw < self.cfg.token_dropout) & (ids > self.data.tokenizer.unk_id)
            ids = ids.masked_fill(hide, self.data.tokenizer.unk_id)
        device = self.session.device
        target = target.to(device)
        if self.cfg.task == "mlm":  # the head reads only the hidden subwords
            at = target != IGNORE
            logits, target = model(ids.to(device), at=at).logits.float(), target[at]
        else:
            logits = model(ids.to(device), chars=_to(chars, device)).logits.float()
            # an ensemble's members each answer on their own (M, B[, L], K)
            target = target.expand(logits.shape[:-1])
        loss = F.cross_entropy(
            logits.flatten(0, -2),
            target.flatten(),
            weight=self.weights,
            ignore_index=IGNORE,
            reduction="sum",
            label_smoothing=self.cfg.label_smoothing,
        )
        return loss, int((target != IGNORE).sum())

    def corrupt(self, ids: Tensor, seed: int) -> tuple[Tensor, Tensor]:
        mask_id = self.data.tokenizer.symbol_id(MASK)
        return masked(ids, self.cfg.mask_share, mask_id, len(self.data.tokenizer), seed)

    @torch.no_grad()
    def validate_mlm(self, model) -> dict:
        """The share of hidden subwords of the validation sentences (the same ones at every
        validation) that the model restores."""
        model.eval()
        device = next(model.parameters()).device
        right = total = 0
        for start in range(0, len(self.data.valid.ids), 128):
            rows = range(start, min(start + 128, len(self.data.valid.ids)))
            ids, _, _ = batch_of(self.data.valid, rows, False)
            ids, target = self.corrupt(ids, self.cfg.engine.seed + start)
            chosen = target != IGNORE
            best = model(ids.to(device), at=chosen.to(device)).logits.argmax(-1).cpu()
            right += int((best == target[chosen]).sum())
            total += int(chosen.sum())
        return {"val_accuracy": round(100 * right / max(1, total), 4)}

    def validate(self, model) -> dict:
        if self.cfg.task == "mlm":
            return self.validate_mlm(model)
        if self.cfg.task == "entities" and self.cfg.calibrate and "O" in self.data.labels:
            return self.validate_calibrated(model)
        predicted, _ = predict(model, self.data.valid, rules=self.rules)
        found = scores(self.cfg.task, self.data.labels, self.data.valid, predicted)
        out = {"val_accuracy": round(found["accuracy"], 4)}
        if "entities" in found:
            out["val_f1"] = round(found["entities"]["micro"]["f1"], 4)
        return out

    def validate_calibrated(self, model) -> dict:
        """An entity tagger's validation: the entity F1 of each bias of O in
        ``OUTSIDE_BIASES``; the best counts, and the checkpoint keeps its bias (0 with no
        gain). ``val_f1_unbiased`` is the F1 at 0."""
        words = word_scores(model, self.data.valid)
        best = unbiased = None
        for bias in OUTSIDE_BIASES:
            outside = Outside(self.data.labels.index("O"), bias)
            predicted = [word_tags(w, self.rules, outside) for w in words]
            found = scores("entities", self.data.labels, self.data.valid, predicted)
            f1 = found["entities"]["micro"]["f1"]
            unbiased = f1 if unbiased is None else unbiased
            if best is None or f1 > best[0]:
                best = (f1, bias, found["accuracy"])
        f1, self.outside_bias, accuracy = best
        return {
            "val_accuracy": round(accuracy, 4),
            "val_f1": round(f1, 4),
            "val_f1_unbiased": round(unbiased, 4),
            "outside_bias": self.outside_bias,
        }

    def record(self) -> dict:
        return {
            "model_config": dataclasses.asdict(self.cfg),
            "tokenizer": self.data.tokenizer.fingerprint,
            "extra": {
                "labels": list(self.data.labels),
                "scheme_kept": self.rules is not None,
                "outside_bias": self.outside_bias,
            },
        }


def train_text(cfg: TextConfig, run_dir: str | Path) -> dict:
    """Train (or resume) a text run; returns its last validation metrics and the best."""
    cfg.validate("text config")

    def make_task(session, log) -> TextTask:
        return TextTask(cfg, load_text_data(cfg, run_dir, log), session)

    engine, metrics = train_task(make_task, cfg, run_dir, EXTENDABLE)
    return {**metrics, "best": engine.best, "metric": engine.task.metric}
