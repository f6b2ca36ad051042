"""Corpus scores through sacreBLEU (Post 2018), with their signatures."""

from __future__ import annotations

from typing import Sequence

from sacrebleu.metrics import BLEU, CHRF


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, object]:
    """Cased sacreBLEU, lowercased BLEU (13a tokenization, as published Multi30k figures are
    lowercased and tokenized) and chrF2, each with its sacreBLEU signature."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    results: dict[str, object] = {}
    for name, metric in (("bleu", BLEU()), ("bleu_lc", BLEU(lowercase=True)), ("chrf", CHRF())):
        results[name] = round(metric.corpus_score(list(hypotheses), [list(references)]).score, 2)
        results[f"{name}_signature"] = str(metric.get_signature())
    return results


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Cased sacreBLEU alone (for validation during training)."""
    return BLEU().corpus_score(list(hypotheses), [list(references)]).score
