"""An entity tagger's words decoded under their scheme's rules (BIO, or IOBES).

A tag chosen word by word can break the scheme: ``O I-PER``, or ``B-LOC I-PER``. conlleval
(:mod:`transduce.evaluation.entities`) reads each break as the start of another entity, so
one name the model half-found becomes two entities, both wrong. Here the words' tags are
chosen together instead: the sequence of highest summed log-probability among those the
scheme allows (Viterbi over the words), as a CRF's decoder does with its transitions fixed
to "allowed" or "forbidden" and nothing learned.

The rules: ``I-X`` (and IOBES's ``E-X``) only after ``B-X`` or ``I-X``; in IOBES, ``B-X``
and ``I-X`` only before ``I-X`` or ``E-X`` and never last. A sentence may start with ``O``,
``B-`` or ``S-``. They hold only where the training tags keep them: in IOB1 (CoNLL-2003's
first release) and IO an entity starts at ``I-``, and such a run reads its words' tags one
by one (:func:`training_rules`).

Legend: W words, T tags.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from transduce.evaluation.entities import split_tag


@dataclass(frozen=True)
class Rules:
    """Which tags may start and end a sentence (T,) and follow one another (T, T):
    ``follows[a, b]`` is True when tag b may come right after tag a."""

    start: Tensor
    follows: Tensor
    end: Tensor


def scheme_rules(labels: list[str]) -> Rules:
    """The rules of ``labels``' scheme: IOBES when any label is ``E-`` or ``S-``, else BIO."""
    parts = [split_tag(label) for label in labels]
    iobes = any(prefix in ("E", "S") for prefix, _ in parts)
    T = len(labels)
    follows = torch.ones(T, T, dtype=torch.bool)
    for a, (pa, ka) in enumerate(parts):
        for b, (pb, kb) in enumerate(parts):
            inside = pa in ("B", "I") and ka == kb  # a leaves an entity of b's type open
            if pb in ("I", "E"):
                follows[a, b] = inside
            elif iobes and pa in ("B", "I"):
                follows[a, b] = False  # an open entity must go on or end first
    start = torch.tensor([prefix not in ("I", "E") for prefix, _ in parts])
    end = torch.tensor([not (iobes and prefix in ("B", "I")) for prefix, _ in parts])
    return Rules(start, follows, end)


def best_allowed(log_probs: Tensor, rules: Rules) -> list[int]:
    """The tags (W,) of highest summed log-probability that ``rules`` allow, for one
    sentence's words' log-probabilities (W, T)."""
    W = log_probs.shape[0]
    if W == 0:
        return []
    never = torch.tensor(float("-inf"))
    step = torch.where(rules.follows, 0.0, never)  # (T, T): 0 allowed, -inf forbidden
    best = torch.where(rules.start, log_probs[0], never)  # (T,): best path ending in each tag
    back = []
    for w in range(1, W):
        through = best[:, None] + step  # (T, T): from tag a to tag b
        best, came = through.max(0)
        best = best + log_probs[w]
        back.append(came)
    best = torch.where(rules.end, best, never)
    tags = [int(best.argmax())]
    for came in reversed(back):
        tags.append(int(came[tags[-1]]))
    return tags[::-1]


def training_rules(labels: list[str], sentences: list[list[int]]) -> Rules | None:
    """The scheme's rules if every training sentence's tags (indices into ``labels``) keep
    them; None (read the tags one by one) if any breaks them, as IOB1 and IO do."""
    rules = scheme_rules(labels)
    start, follows, end = rules.start.tolist(), rules.follows.tolist(), rules.end.tolist()
    for tags in sentences:
        if tags and not (
            start[tags[0]] and end[tags[-1]] and all(follows[a][b] for a, b in zip(tags, tags[1:]))
        ):
            return None
    return rules
