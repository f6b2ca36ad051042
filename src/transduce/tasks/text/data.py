"""A text run's data: its files read, its subword tokenizer (trained on the training texts,
kept in the run), and every sentence as ids with its label or its words' tags.

A sentence is ``[BOS] subwords…`` (BOS is the classifier's [CLS] token). A word is split
into subwords on its own, and its tag is learned and read at its first subword (``piece=last``:
its last); the others carry no label (``IGNORE``), as BERT's tagger does.
"""

from __future__ import annotations

import functools
import random
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transduce import runs
from transduce.data.labelled import Sentences, Tagged, read_lines, read_sentences, read_tagged
from transduce.data.tokenizer import SubwordTokenizer
from transduce.errors import UserError
from transduce.io import atomic_path
from transduce.nn.chars import MAX_CHARS, char_ids
from transduce.tasks.text.config import MASK, TextConfig

IGNORE = -100  # the label of a position no loss or score reads (cross_entropy's default)


@dataclass
class Encoded:
    """Sentences as ids: ``ids`` (each starts with BOS), ``labels`` (an int a sentence, or a
    list parallel to ids, ``IGNORE`` but at the subword that speaks for each word), and for
    tagged sentences ``words`` and ``gold``, every word's tag index (also those of words past
    ``max_tokens``, which a score counts as missed); with characters asked for, ``chars``
    parallel to ids: the character ids of each subword's word (none for BOS)."""

    ids: list[list[int]]
    labels: list
    words: list[list[str]]
    gold: list[list[int]] = field(default_factory=list)
    chars: list[list[tuple[int, ...]]] = field(default_factory=list)
    _rows: Rows | None = field(default=None, init=False, repr=False, compare=False)

    def tensors(self) -> Rows:
        """Each sentence's ids, per-token labels and characters as tensors, made on the
        first call (and again if sentences were added since): a training batch then pads
        tensors, not Python lists, which cost a tagger about 4 ms of a 60 ms step."""
        made = self._rows
        if made is None or len(made.ids) != len(self.ids):
            per_token = bool(self.labels) and isinstance(self.labels[0], list)
            made = Rows(
                [torch.tensor(ids, dtype=torch.long) for ids in self.ids],
                [torch.tensor(t, dtype=torch.long) for t in self.labels] if per_token else None,
                [torch.tensor(c, dtype=torch.long).reshape(-1, MAX_CHARS) for c in self.chars],
            )
            self._rows = made
        return made


@dataclass
class Rows:
    """:meth:`Encoded.tensors`: (L,) ids, (L,) tags (None for a label a sentence) and
    (L, C) character ids (empty without characters), a tensor each sentence."""

    ids: list[torch.Tensor]
    tags: list[torch.Tensor] | None
    chars: list[torch.Tensor]


@dataclass
class TextData:
    """A run's tokenizer, its label names, and its train and validation sentences."""

    tokenizer: SubwordTokenizer
    labels: list[str]
    train: Encoded
    valid: Encoded


def read(cfg: TextConfig, path: str) -> Sentences | Tagged:
    if cfg.task == "mlm":
        return read_lines(path, cfg.replace_invalid)
    if cfg.task == "classify":
        return read_sentences(path, cfg.format, cfg.replace_invalid)
    return read_tagged(path, cfg.format, cfg.column)


def texts_of(found: Sentences | Tagged) -> list[str]:
    return found.texts if isinstance(found, Sentences) else [" ".join(w) for w in found.words]


def held_out(cfg: TextConfig, found: Sentences | Tagged):
    """(train, valid) parts of ``found``: a seeded ``valid_share`` of it validates."""
    n = len(found.lines)
    order = list(range(n))
    random.Random(cfg.engine.seed).shuffle(order)
    cut = max(1, round(cfg.valid_share * n))
    if n - cut < 1:
        raise UserError(f"{cfg.train}: {n} sentences leave none to train on once {cut} validate")
    return _pick(found, sorted(order[cut:])), _pick(found, sorted(order[:cut]))


def _pick(found, rows: list[int]):
    if isinstance(found, Sentences):
        return Sentences(
            [found.texts[i] for i in rows],
            [found.labels[i] for i in rows],
            [found.lines[i] for i in rows],
        )
    return Tagged(
        [found.words[i] for i in rows],
        [found.tags[i] for i in rows],
        [found.lines[i] for i in rows],
    )


def encode(
    tokenizer: SubwordTokenizer,
    found: Sentences | Tagged,
    labels: list[str],
    max_tokens: int,
    source: str,
    piece: str = "first",
    chars: bool = False,
) -> Encoded:
    """``found`` as ids and label indices (and with ``chars``, each subword's word's
    character ids); a label not in ``labels`` is a UserError naming its line (a validation
    or test file with a class the training file lacks)."""
    index = {name: k for k, name in enumerate(labels)}

    def label_of(name: str, line: int) -> int:
        if name not in index:
            raise UserError(
                f"{source}:{line}: label {name!r} is not among the training file's "
                f"({', '.join(labels[:8])}{', …' if len(labels) > 8 else ''})"
            )
        return index[name]

    none = (0,) * MAX_CHARS  # BOS's characters
    if isinstance(found, Sentences):
        out = Encoded([], [], [])
        if chars:
            for pieces, spelled in tokenizer.encode_words(found.texts):
                out.ids.append([tokenizer.bos_id, *pieces][:max_tokens])
                out.chars.append([none, *map(_chars_of, spelled)][:max_tokens])
        else:
            out.ids = [[tokenizer.bos_id, *s][:max_tokens] for s in tokenizer.encode(found.texts)]
        if labels:  # plain text for a masked language model has none
            out.labels = [label_of(n, line) for n, line in zip(found.labels, found.lines)]
        else:
            out.labels = [0] * len(out.ids)
        return out
    out = Encoded([], [], [])
    for words, tags, line in zip(found.words, found.tags, found.lines):
        ids, marks, gold = [tokenizer.bos_id], [IGNORE], [label_of(t, line) for t in tags]
        letters = [none]
        for word, pieces, tag in zip(words, tokenizer.encode(words), gold):
            pieces = pieces or [tokenizer.unk_id]  # a word SentencePiece makes nothing of
            ids += pieces
            rest = [IGNORE] * (len(pieces) - 1)
            marks += [tag, *rest] if piece == "first" else [*rest, tag]
            if chars:
                letters += [_chars_of(word)] * len(pieces)
        out.ids.append(ids[:max_tokens])
        out.labels.append(marks[:max_tokens])
        out.words.append(words)
        out.gold.append(gold)
        if chars:
            out.chars.append(letters[:max_tokens])
    return out


def encode_for(
    cfg: TextConfig, tokenizer: SubwordTokenizer, found: Sentences | Tagged, labels, source: str
) -> Encoded:
    """:func:`encode` as the run ``cfg`` reads its text: its ``max_tokens``, its ``piece``,
    and its words' letters if it has a character model."""
    return encode(tokenizer, found, labels, cfg.max_tokens, source, cfg.piece, cfg.chars > 0)


@functools.lru_cache(maxsize=100_000)
def _chars_of(word: str) -> tuple[int, ...]:
    """char_ids(word), remembered (a corpus repeats its words)."""
    return tuple(char_ids(word))


def load_text_data(cfg: TextConfig, run_dir: str | Path, log) -> TextData:
    """Read the files, train (or reread) the run's tokenizer, and encode every sentence.
    A new tokenizer is placed in ``run_dir`` only once the data is known good."""
    run_dir = Path(run_dir)
    found = read(cfg, cfg.train)
    if cfg.valid:
        train, valid, valid_source = found, read(cfg, cfg.valid), cfg.valid
    else:
        train, valid = held_out(cfg, found)
        valid_source = f"{cfg.train} (held out)"
    names = sorted(set(train.labels if isinstance(train, Sentences) else _tags(train)))
    if cfg.task == "mlm":
        names = []  # it predicts subwords, not labels
    path = run_dir / runs.TOKENIZER
    started = (run_dir / runs.CONFIG).exists() or runs.step_checkpoints(run_dir)
    with tempfile.TemporaryDirectory(prefix="transduce-spm-") as scratch:
        if path.exists() and started:
            tokenizer, new = SubwordTokenizer(path), False
        elif cfg.init:  # fine-tuning: the pre-trained run's subwords
            tokenizer, new = SubwordTokenizer(Path(cfg.init) / runs.TOKENIZER), True
        else:
            log.info(
                f"training a SentencePiece model of {cfg.vocab_size} subwords on "
                f"{len(train.lines):,} sentences" + (", lowercased" if cfg.lowercase else "")
            )
            tokenizer = SubwordTokenizer.train(
                texts_of(train),
                Path(scratch) / "spm.model",
                cfg.vocab_size,
                "unigram",
                cfg.lowercase,
                (MASK,) if cfg.task == "mlm" else (),
            )
            new = True
        data = TextData(
            tokenizer,
            names,
            encode_for(cfg, tokenizer, train, names, cfg.train),
            encode_for(cfg, tokenizer, valid, names, valid_source),
        )
        if new:
            run_dir.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as out:
                shutil.copyfile(tokenizer.path, out)
            data.tokenizer = SubwordTokenizer(path)
    return data


def _tags(found: Tagged) -> list[str]:
    return [t for tags in found.tags for t in tags]
