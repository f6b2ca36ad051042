"""Corpus scores through sacreBLEU (Post 2018), with their signatures."""

from __future__ import annotations

from typing import Sequence

from sacrebleu.metrics import BLEU, CHRF


def corpus_scores(
    hypotheses: Sequence[str],
    references: Sequence[str],
    lang: str | None = None,
    tokenized_references: Sequence[str] | None = None,
) -> dict[str, object]:
    """Cased sacreBLEU, lowercased BLEU (sacreBLEU's 13a tokenization) and chrF2, each with
    its sacreBLEU signature; with ``lang``, also ``bleu_tok``: the BLEU that published
    Multi30k figures use (see :func:`literature_tokenize`), against
    ``tokenized_references`` (the official ``*.lc.norm.tok.*`` file) or, without them,
    against the references tokenized the same way."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    results: dict[str, object] = {}
    for name, metric in (("bleu", BLEU()), ("bleu_lc", BLEU(lowercase=True)), ("chrf", CHRF())):
        results[name] = round(metric.corpus_score(list(hypotheses), [list(references)]).score, 2)
        results[f"{name}_signature"] = str(metric.get_signature())
    if lang is not None:
        refs = (
            list(tokenized_references)
            if tokenized_references is not None
            else literature_tokenize(references, lang)
        )
        if len(refs) != len(hypotheses):
            raise ValueError(f"{len(hypotheses)} hypotheses for {len(refs)} tokenized references")
        metric = BLEU(tokenize="none", force=True)  # tokenised on purpose: no warning
        score = metric.corpus_score(literature_tokenize(hypotheses, lang), [refs]).score
        results["bleu_tok"] = round(score, 2)
        results["bleu_tok_signature"] = (
            f"{metric.get_signature()}|moses-lc-norm-tok:{lang}|sacremoses"
        )
    return results


def moses_languages() -> set[str]:
    """The language codes sacremoses has tokenisation rules (non-breaking prefixes) for."""
    from sacremoses.corpus import NonbreakingPrefixes

    return set(NonbreakingPrefixes().available_langs.values())


def literature_tokenize(lines: Sequence[str], lang: str) -> list[str]:
    """Lines in the form published Multi30k BLEU is computed on (the official
    ``*.lc.norm.tok.*`` files): lowercased, Moses punctuation-normalised, Moses-tokenised
    with escaping (``&quot;``, ``&apos;``), by sacremoses."""
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    normalizer, tokenizer = MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)
    return [
        tokenizer.tokenize(normalizer.normalize(line.lower()), escape=True, return_str=True)
        for line in lines
    ]


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Cased sacreBLEU alone (for validation during training)."""
    return BLEU().corpus_score(list(hypotheses), [list(references)]).score
