"""Validation: teacher-forced loss and perplexity, and BLEU of greedy translations."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from transduce.data.batching import collate, token_batches
from transduce.decoding.translator import Translator
from transduce.device import autocast
from transduce.evaluation import bleu
from transduce.nn import padding_mask


@torch.no_grad()
def validate(model, data, device, precision, max_tokens: int = 6000) -> dict:
    """Returns valid_loss (cross-entropy per target token, no smoothing), valid_ppl and
    valid_bleu (cased sacreBLEU of greedy translations; against the lowercased references
    when the tokenizer lowercases)."""
    model.eval()
    tok = data.tokenizer
    lengths = [max(len(s), len(t)) + 2 for s, t in zip(data.valid_src, data.valid_tgt)]
    nll, tokens = 0.0, 0
    for batch in token_batches(lengths, max_tokens):
        src, tgt = collate(
            [data.valid_src[i] for i in batch],
            [data.valid_tgt[i] for i in batch],
            tok.pad_id,
            tok.bos_id,
            tok.eos_id,
        )
        src, tgt = src.to(device), tgt.to(device)
        with autocast(device, precision):
            logits = model(src, tgt[:, :-1], padding_mask(src, tok.pad_id))
        nll += F.cross_entropy(
            logits.float().flatten(0, 1),
            tgt[:, 1:].flatten(),
            ignore_index=tok.pad_id,
            reduction="sum",
        ).item()
        tokens += int((tgt[:, 1:] != tok.pad_id).sum())
    translator = Translator(model=model, tokenizer=tok, device=device, precision=precision)
    translations = translator.search(data.valid_src_text, beam_size=1)
    hyps = [t[0][0] for t in translations]
    refs = data.valid_tgt_text
    if tok.lowercases:  # its translations are lowercase: score them against lowercase text
        refs = [line.lower() for line in refs]
    loss = nll / max(tokens, 1)
    return {
        "valid_loss": round(loss, 4),
        "valid_ppl": round(math.exp(min(loss, 50)), 2),
        "valid_bleu": round(bleu(hyps, refs), 2),
    }
