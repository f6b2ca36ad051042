"""What a trained Transformer attends to when it translates one sentence.

The sentence is translated (beam search), then the model is run once more over the source
and its own output with every attention layer asked for its weights: the encoder's
self-attention, the decoder's causal self-attention and the cross-attention that aligns
the output with the source.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transduce.decoding.beam import beam_search
from transduce.decoding.sources import EXTRA_OUTPUT, encode_sources
from transduce.nn import padding_mask

KINDS = ("cross", "encoder", "decoder")


@dataclass
class AttentionMaps:
    """Tokens and weights of one translation.

    Attributes:
        sentence, translation: the text in and out.
        source: the source subwords and the end-of-sentence token (S of them).
        target_inputs: what the decoder read: ``<s>`` and the output subwords (T of them).
        target: what it produced at each of those positions: the output subwords and
            ``</s>``.
        encoder: per layer, (H, S, S) weights: row = query source token.
        decoder: per layer, (H, T, T) causal weights over ``target_inputs``.
        cross: per layer, (H, T, S) weights of each produced token over the source.
    """

    sentence: str
    translation: str
    source: list[str]
    target_inputs: list[str]
    target: list[str]
    encoder: list[np.ndarray]
    decoder: list[np.ndarray]
    cross: list[np.ndarray]

    def weights(self, kind: str) -> list[np.ndarray]:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        return {"cross": self.cross, "encoder": self.encoder, "decoder": self.decoder}[kind]

    def labels(self, kind: str) -> tuple[list[str], list[str]]:
        """(row labels, column labels) of a kind's heatmaps."""
        return {
            "cross": (self.target, self.source),
            "encoder": (self.source, self.source),
            "decoder": (self.target_inputs, self.target_inputs),
        }[kind]

    def to_dict(self) -> dict:
        """Plain lists, for JSON (the server and the HTML view)."""

        def rounded(layers):
            return [np.round(w, 4).tolist() for w in layers]

        return {
            "sentence": self.sentence,
            "translation": self.translation,
            "source": self.source,
            "target_inputs": self.target_inputs,
            "target": self.target,
            "encoder": rounded(self.encoder),
            "decoder": rounded(self.decoder),
            "cross": rounded(self.cross),
        }


def translated_ids(
    translator, sentence: str, beam: int = 5, lenpen: float = 0.6
) -> tuple[list[int], list[int]]:
    """(source ids ending in EOS, the best translation's ids without EOS) of ``sentence``."""
    model, tok, device = translator.model, translator.tokenizer, translator.device
    src_ids = encode_sources(tok, [sentence], translator.max_source)[0] + [tok.eos_id]
    src = torch.tensor([src_ids], device=device)  # (1, S)
    best = beam_search(
        model,
        src,
        padding_mask(src, tok.pad_id),
        tok.bos_id,
        tok.eos_id,
        max(beam, 1),
        lenpen,
        extra_len=EXTRA_OUTPUT,
    )[0][0]
    return src_ids, [t for t in best.tokens if t != tok.eos_id]


@torch.no_grad()
def attention_maps(
    translator,
    sentence: str,
    beam: int = 5,
    lenpen: float = 0.6,
    ids: tuple[list[int], list[int]] | None = None,
) -> AttentionMaps:
    """Translate ``sentence`` with ``translator`` (a PyTorch
    :class:`~transduce.decoding.translator.Translator`) and collect its attention weights;
    ``ids``: the (source, translation) ids of :func:`translated_ids`, when already found."""
    model, tok, device = translator.model, translator.tokenizer, translator.device
    src_ids, out_ids = ids or translated_ids(translator, sentence, beam, lenpen)
    src = torch.tensor([src_ids], device=device)  # (1, S)
    mask = padding_mask(src, tok.pad_id)
    translation = tok.decode(out_ids)
    tgt = torch.tensor([[tok.bos_id] + out_ids], device=device)  # (1, T)
    memory, encoder = model.encode_with_weights(src, mask)
    out = model.decode(tgt, memory, mask, need_weights=True)

    def numpy(layers):
        return [w[0].float().cpu().numpy() for w in layers]  # (H, Q, K) each

    return AttentionMaps(
        sentence,
        translation,
        tok.pieces(src_ids[:-1]) + ["</s>"],
        ["<s>"] + tok.pieces(out_ids),
        tok.pieces(out_ids) + ["</s>"],
        numpy(encoder),
        numpy(out.self_weights),
        numpy(out.cross_weights),
    )
