"""What a trained Transformer does, step by step, when it translates one sentence: the
explainer's view (``transduce explain``, the server's /explain page, and
:meth:`~transduce.decoding.translator.Translator.explain`).

- The beam search is the real one (:func:`~transduce.decoding.beam.beam_search`), traced: at
  each step, the live hypotheses, each one's most probable next tokens, the candidates the
  step ranked, and which of them continue, finish (with the length penalty) or fall out.
- The attention is that of the final translation, read by the model once more with every
  layer's weights (as :func:`~transduce.decoding.inspect.attention_maps` does): step t
  writes output token t, whose cross-attention and decoder self-attention rows are those
  of row t.
- One head opened up (:func:`head_numbers`): the query, the keys and values that head
  projects, q·k/√d_k, the mask, the softmax and the weighted sum of the values, captured
  from the attention module's own inputs during that same pass.
- The positions: the sinusoidal table added to the sentence's token embeddings.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from transduce.decoding.beam import BeamStep, beam_search
from transduce.decoding.inspect import KINDS, AttentionMaps, attention_maps, translated_ids
from transduce.decoding.sources import EXTRA_OUTPUT, encode_sources
from transduce.nn import padding_mask
from transduce.nn.attention import masked_softmax

TOP_K = 5  # next tokens shown for each hypothesis


@dataclass
class Explanation:
    """One sentence's decoding, step by step, and its attention.

    Attributes:
        maps: the attention of the final translation (every layer and head).
        steps: per step of the beam search, a dict: ``hypotheses`` (the live beams: tokens,
            summed log-probability, ``next``: the top-k next tokens and probabilities),
            ``candidates`` (the 2K best extensions, best first: ``parent`` (index into
            hypotheses), ``token``, ``log_prob``, ``status``: "continues", "finished" (with
            its ``score`` = log_prob / length penalty) or "dropped"), ``penalty``.
        nbest: the finished hypotheses, best first: tokens, text, log-probability, score.
        beam, lenpen: the settings it was decoded with.
        positions: ``table`` (S, D) the sinusoidal encodings of the source positions,
            ``embeddings`` (S, D) the source tokens' embeddings × √d_model, both as the
            encoder adds them.
    """

    maps: AttentionMaps
    steps: list[dict]
    nbest: list[dict]
    beam: int
    lenpen: float
    positions: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Plain lists, for JSON (the server's /explain)."""
        return {
            **self.maps.to_dict(),
            "steps": self.steps,
            "nbest": self.nbest,
            "beam": self.beam,
            "lenpen": self.lenpen,
            "layers": len(self.maps.cross),
            "heads": int(self.maps.cross[0].shape[0]),
            "positions": {k: np.round(v, 4).tolist() for k, v in self.positions.items()},
        }


@dataclass
class HeadNumbers:
    """The computation of one head for one query token (the study notes' formula
    softmax(q·kᵀ/√d_k)·V), with the numbers the model used.

    Attributes:
        kind, layer, head, query: which attention ("encoder", "decoder", "cross"), layer and
            head (from 0), and the query's position.
        query_token, key_tokens: the labels of the query and of the keys.
        q: (d_k,) the query. k, v: (K, d_k) the keys and values of that head.
        scores: (K,) q·k/√d_k. mask: (K,) whether each key may be attended to (False: the
            score is replaced by −∞). weights: (K,) the softmax of the masked scores.
        output: (d_k,) Σ weights·v, what this head passes on (before the heads are joined
            and projected).
        d_k: the head's size.
    """

    kind: str
    layer: int
    head: int
    query: int
    query_token: str
    key_tokens: list[str]
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    scores: np.ndarray
    mask: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    d_k: int

    def to_dict(self) -> dict:
        def plain(a):
            return np.round(a.astype(np.float64), 6).tolist()

        return {
            "kind": self.kind,
            "layer": self.layer,
            "head": self.head,
            "query": self.query,
            "query_token": self.query_token,
            "key_tokens": self.key_tokens,
            "d_k": self.d_k,
            "q": plain(self.q),
            "k": plain(self.k),
            "v": plain(self.v),
            "scores": [
                None if not m else round(float(s), 6) for s, m in zip(self.scores, self.mask)
            ],
            "raw_scores": plain(self.scores),
            "mask": self.mask.tolist(),
            "weights": plain(self.weights),
            "output": plain(self.output),
        }


@torch.no_grad()
def explain(
    translator, sentence: str, beam: int = 5, lenpen: float = 0.6, top_k: int = TOP_K
) -> Explanation:
    """Translate ``sentence`` with beam search, tracing every step, and collect the
    attention of the result (see :class:`Explanation`)."""
    model, tok, device = translator.model, translator.tokenizer, translator.device
    src_ids = encode_sources(tok, [sentence], translator.max_source)[0] + [tok.eos_id]
    src = torch.tensor([src_ids], device=device)  # (1, S)
    mask = padding_mask(src, tok.pad_id)
    traced: list[BeamStep] = []
    found = beam_search(
        model,
        src,
        mask,
        tok.bos_id,
        tok.eos_id,
        max(beam, 1),
        lenpen,
        nbest=max(beam, 1),
        extra_len=EXTRA_OUTPUT,
        trace=traced.append,
    )[0]
    best = [t for t in found[0].tokens if t != tok.eos_id]  # the search above: not run again
    maps = attention_maps(translator, sentence, ids=(src_ids, best))
    nbest = [
        {
            "tokens": tok.pieces(h.tokens),
            "text": tok.decode(h.tokens),
            "log_prob": round(h.log_prob, 4),
            "score": round(h.score, 4),
        }
        for h in found
    ]
    steps = [_step(s, tok, top_k) for s in traced]
    positions = {
        "table": model.positions.table[: len(src_ids)].float().cpu().numpy(),
        "embeddings": model.src_embed(src)[0].float().cpu().numpy(),
    }
    return Explanation(maps, steps, nbest, beam, lenpen, positions)


def _step(step: BeamStep, tok, top_k: int) -> dict:
    """One traced step of the first sentence, as plain values."""
    K = step.scores.shape[1]
    hypotheses, slot_of = [], {}
    for k in range(K):
        score = float(step.scores[0, k])
        if score == float("-inf"):  # the first step expands one beam only
            continue
        probs, ids = step.log_probs[0, k].exp().topk(top_k)
        slot_of[k] = len(hypotheses)
        hypotheses.append(
            {
                "slot": k,
                "tokens": tok.pieces(step.prefixes[k, 1:].tolist()),
                "log_prob": round(score, 4),
                "next": [
                    {"token": _piece(tok, i), "prob": round(float(p), 4)}
                    for p, i in zip(probs.tolist(), ids.tolist())
                ],
            }
        )
    kept = step.keep[0].tolist()
    candidates = []
    for j in range(step.top_scores.shape[1]):
        log_prob = float(step.top_scores[0, j])
        if log_prob == float("-inf"):
            continue
        eos = bool(step.is_eos[0, j])
        status = "finished" if eos and j < K else "continues" if j in kept else "dropped"
        entry = {
            "parent": slot_of.get(int(step.beam[0, j])),
            "slot": (kept.index(j) if status == "continues" else None),
            "token": _piece(tok, int(step.token[0, j])),
            "log_prob": round(log_prob, 4),
            "status": status,
        }
        if status == "finished":
            entry["score"] = round(log_prob / step.penalty, 4)
        candidates.append(entry)
    return {
        "t": step.t,
        "hypotheses": hypotheses,
        "candidates": candidates,
        "penalty": round(step.penalty, 4),
    }


def _piece(tok, token_id: int) -> str:
    return "</s>" if token_id == tok.eos_id else tok.pieces([token_id])[0]


@torch.no_grad()
def head_numbers(
    translator,
    sentence: str,
    kind: str,
    layer: int,
    head: int,
    query: int,
    beam: int = 5,
    lenpen: float = 0.6,
) -> HeadNumbers:
    """The numbers of one head's attention for one query token of the translation of
    ``sentence`` (see :class:`HeadNumbers`): the module's own inputs, captured while the
    model reads the source and its translation, projected and scored here step by step."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    model, tok, device = translator.model, translator.tokenizer, translator.device
    src_ids, out_ids = translated_ids(translator, sentence, beam, lenpen)
    maps = attention_maps(translator, sentence, ids=(src_ids, out_ids))
    layers = model.encoder.layers if kind == "encoder" else model.decoder.layers
    if not 0 <= layer < len(layers):
        raise ValueError(f"layer must be between 0 and {len(layers) - 1}, not {layer}")
    module = layers[layer].cross_attn if kind == "cross" else layers[layer].self_attn
    if not 0 <= head < module.num_heads:
        raise ValueError(f"head must be between 0 and {module.num_heads - 1}, not {head}")
    rows, columns = maps.labels(kind)
    if not 0 <= query < len(rows):
        raise ValueError(f"query must be between 0 and {len(rows) - 1}, not {query}")
    src = torch.tensor([src_ids], device=device)
    mask = padding_mask(src, tok.pad_id)
    tgt = torch.tensor([[tok.bos_id] + out_ids], device=device)
    seen = {}
    with _capture(module, seen):
        memory, _ = model.encode_with_weights(src, mask)
        if kind != "encoder":
            model.decode(tgt, memory, mask, need_weights=True)
    query_in, keys, values, key_mask = seen["call"]
    q = module.split_heads(module.q_proj(query_in))[0, head, query].float()  # (d_k,)
    k, v = keys[0, head].float(), values[0, head].float()  # (K, d_k)
    d_k = q.shape[-1]
    scores = k @ q / math.sqrt(d_k)  # (K,)
    allowed = torch.ones_like(scores, dtype=torch.bool)
    if key_mask is not None:  # (B, Q|1, K) or (B, H|1, Q|1, K): this query's row
        m = key_mask.reshape(-1, key_mask.shape[-2], key_mask.shape[-1])[0]  # (Q|1, K)
        allowed = m[query if m.shape[0] > 1 else 0].bool()
    weights = masked_softmax(scores[None], mask=allowed[None])[0]
    output = weights @ v
    return HeadNumbers(
        kind,
        layer,
        head,
        query,
        rows[query],
        columns,
        q.cpu().numpy(),
        k.cpu().numpy(),
        v.cpu().numpy(),
        scores.cpu().numpy(),
        allowed.cpu().numpy(),
        weights.cpu().numpy(),
        output.cpu().numpy(),
        int(d_k),
    )


@contextlib.contextmanager
def _capture(module, seen: dict):
    """Record the (query, projected keys, projected values, mask) of ``module``'s one full
    call (the teacher-forced pass calls each attention once)."""
    original = module.attend

    def attend(query, keys, values, mask=None, need_weights=False):
        seen["call"] = (query, keys, values, mask)
        return original(query, keys, values, mask, need_weights)

    module.attend = attend
    try:
        yield
    finally:
        del module.attend  # the class's method again
