"""Batched beam search with the decoder cache (Wu et al. 2016 length penalty, as in
Vaswani et al. 2017 §6.1: beam 4–5, α = 0.6, maximum output length = input length + 50).

All sentences and their beams run as one batch of B·K rows; after each step the cache is
reordered so that row b·K + k holds the k-th surviving beam of sentence b.

Legend: B sentences, K beams, V vocabulary, t the current step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from transduce.decoding.greedy import Seq2Seq


@dataclass(frozen=True)
class Hypothesis:
    """A finished translation: token ids (ending in EOS), the sum of their log-probabilities,
    and the score that ranks it (log-probability / length penalty)."""

    tokens: list[int]
    log_prob: float
    score: float


@dataclass(frozen=True)
class BeamStep:
    """One step of :func:`beam_search`, for the n sentences still decoding (``alive``).

    Attributes:
        t: the step (0: the first output token).
        alive: the sentences' indices in the batch.
        prefixes: (n·K, t + 1) each beam's tokens so far, BOS first.
        scores: (n, K) each beam's summed log-probability (-inf: an empty slot).
        log_probs: (n, K, V) each beam's next-token log-probabilities.
        top_scores, beam, token, is_eos: (n, 2K) the best candidates, best first: their
            summed log-probability, the beam they extend, their token, whether it is EOS.
        keep: (n, K) which candidates continue (indices into the 2K): slot j of the next
            step is candidate keep[j]. An EOS candidate within the first K finishes.
        penalty: the length penalty of a hypothesis that ends at this step.
    """

    t: int
    alive: list[int]
    prefixes: Tensor
    scores: Tensor
    log_probs: Tensor
    top_scores: Tensor
    beam: Tensor
    token: Tensor
    is_eos: Tensor
    keep: Tensor
    penalty: float


LENPEN_STYLES = ("wu", "power")
CHUNK = 64  # vocabulary tokens a chunk of best_extensions


def length_penalty(length: int | Tensor, alpha: float, style: str = "wu") -> float | Tensor:
    """lp(Y) = ((5 + |Y|) / 6)^α (Wu et al. 2016, eq. 14; the paper's), or with
    ``style="power"`` |Y|^α (what CTranslate2 and Hugging Face ``generate`` divide by).
    |Y| counts EOS."""
    if style == "power":
        return length**alpha
    if style != "wu":
        raise ValueError(f"length-penalty style must be one of {LENPEN_STYLES}, not {style!r}")
    return ((5 + length) / 6) ** alpha


def _can_stop(
    finished: list[Hypothesis], nbest: int, best_alive: float, longest: int, penalty
) -> bool:
    """Whether no live beam can still enter the top ``nbest``. Log-probabilities only fall
    as a beam grows, and the length penalty divides them by at most lp(longest), so a live
    beam's best future score is its log-probability / lp(longest)."""
    if len(finished) < nbest:
        return False
    worst_kept = sorted(h.score for h in finished)[-nbest]
    return worst_kept >= best_alive / penalty(longest)


@torch.no_grad()
def beam_search(
    model: Seq2Seq,
    src: Tensor,
    src_mask: Tensor,
    bos_id: int,
    eos_id: int,
    beam_size: int = 5,
    alpha: float = 0.6,
    nbest: int = 1,
    max_len: Tensor | None = None,
    extra_len: int = 50,
    lenpen_style: str = "wu",
    no_repeat_ngram: int = 0,
    trace: Callable[[BeamStep], None] | None = None,
    early_exit: bool = False,
    group: int = 1,
) -> list[list[Hypothesis]]:
    """Translate a batch with beam search.

    A sentence leaves the batch as soon as it is done (its best finished hypotheses cannot be
    beaten), so the rows still decoding are those of unfinished sentences only.

    Args:
        model: a :class:`Seq2Seq` in eval mode.
        src: (B, S) source ids.
        src_mask: (B, 1, S).
        bos_id: the start-of-sentence id.
        eos_id: the end-of-sentence id.
        beam_size: K.
        alpha: length-penalty exponent (0 = raw log-probability).
        nbest: how many hypotheses to return per sentence (≤ K).
        max_len: (B,) most output tokens per sentence, EOS included; by default the source
            length + ``extra_len``.
        lenpen_style: "wu" (the paper's) or "power"; see :func:`length_penalty`.
        no_repeat_ngram: N > 0 forbids a hypothesis to contain any N-gram of tokens twice
            (a remedy for outputs that loop on a subword); 0 is off.
        trace: called after each step with a :class:`BeamStep` (what the beams were, what
            they could become, which continue, finish or fall out): the explainer's view.
        early_exit: also end a sentence at the first step whose best candidate is EOS
            (once it has ``nbest`` finished hypotheses): fewer steps, but a live beam that
            the length penalty would still have preferred is given up. By default a
            sentence ends only when no live beam can beat its finished ones.
        group: sentences that are done leave the batch only when the sentences still
            decoding fit in a multiple of ``group`` (those that stay a little longer decode
            on, and what they find is dropped): the batch then takes fewer different sizes,
            where each new size costs the model time of its own (oneDNN builds a kernel for
            it). 1: each leaves at once.

    Returns:
        For each sentence, its ``nbest`` best hypotheses, best first.
    """
    # size: one batched search read top to bottom (expand, score, prune, finish), as the
    # scripted-table tests walk it; split, its steps would pass six tensors between them
    if not 1 <= nbest <= beam_size:
        raise ValueError(f"nbest must be between 1 and the beam size {beam_size}")
    length_penalty(1, alpha, lenpen_style)  # reject an unknown style before any work

    def penalty(length):
        return length_penalty(length, alpha, lenpen_style)

    B, K, device = src.shape[0], beam_size, src.device
    if max_len is None:
        max_len = src_mask.reshape(B, -1).sum(-1) + extra_len  # (B,)
    limits = [int(n) for n in max_len.tolist()]
    state, grouped = _expand(model.start(src, src_mask), K, B, device)
    # Row n·K + k of the decoding batch is beam k of sentence alive[n].
    alive = list(range(B))
    scores = torch.full((B, K), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: expand only the first
    prefixes = torch.full((B * K, 1), bos_id, dtype=torch.long, device=device)
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    done: set[int] = set()  # sentences that are done, some may still be in the batch
    for t in range(max(limits)):
        n = len(alive)
        logits, state = model.step(prefixes[:, -1:], state)  # (n·K, 1, V)
        V = logits.shape[-1]
        candidates = logits[:, -1].float()  # in place below: one fresh (n·K, V) a step
        candidates = torch.log_softmax(candidates, -1, out=candidates).view(n, K, V)
        if no_repeat_ngram and t + 1 >= no_repeat_ngram:
            _block_repeats(candidates.view(n * K, V), prefixes, no_repeat_ngram)
        step_log_probs = candidates.clone() if trace is not None else None
        ending = [i for i, b in enumerate(alive) if t + 1 >= limits[b]]
        if ending:  # at the maximum length only EOS may follow
            ending = torch.tensor(ending, device=device)
            candidates[ending] = torch.where(
                torch.arange(V, device=device) == eos_id, candidates[ending], float("-inf")
            )
        top_scores, beam, token = best_extensions(candidates, scores, 2 * K)  # (n, 2K)
        is_eos = token == eos_id
        _finish(finished, alive, done, prefixes, top_scores, beam, is_eos, eos_id, t, K, penalty)
        # the K best non-EOS candidates continue, in score order
        keep = torch.sort(is_eos.int(), dim=1, stable=True).indices[:, :K]  # (n, K)
        if trace is not None:
            trace(
                BeamStep(
                    t,
                    list(alive),
                    prefixes.cpu(),
                    scores.cpu(),
                    step_log_probs.cpu(),
                    top_scores.cpu(),
                    beam.cpu(),
                    token.cpu(),
                    is_eos.cpu(),
                    keep.cpu(),
                    float(penalty(t + 1)),
                )
            )
        scores = top_scores.gather(1, keep)
        source_rows = torch.arange(n, device=device)[:, None] * K + beam.gather(1, keep)  # (n, K)
        tokens = token.gather(1, keep)
        best_alive = scores.max(1).values.tolist()
        top_eos = is_eos[:, 0].tolist() if early_exit else [False] * n
        for i, b in enumerate(alive):
            if b not in done and (
                (top_eos[i] and len(finished[b]) >= nbest)
                or _can_stop(finished[b], nbest, best_alive[i], limits[b], penalty)
            ):
                done.add(b)
        stay = _stay(alive, done, group if trace is None else 1)
        if not stay:
            break
        kept = None
        if len(stay) < n:  # drop the sentences that are done
            kept = torch.tensor(stay, device=device)
            alive = [alive[i] for i in stay]
            scores, source_rows, tokens = scores[kept], source_rows[kept], tokens[kept]
        source_rows = source_rows.view(-1)  # (n'·K,)
        prefixes = torch.cat([prefixes[source_rows], tokens.view(-1, 1)], 1)
        state = state.reorder(source_rows, kept) if grouped else state.reorder(source_rows)
    return [sorted(f, key=lambda h: -h.score)[:nbest] for f in finished]


def best_extensions(
    log_probs: Tensor, scores: Tensor, k: int, chunk: int = CHUNK
) -> tuple[Tensor, Tensor, Tensor]:
    """The k best one-token extensions of each sentence's beams, best first: (n, k) each of
    their summed log-probability (scores + log_probs), their beam and their token; as
    ``(scores[..., None] + log_probs).view(n, K·V).topk(k)`` would give them, up to the
    order of ties.

    A top-k over K·V values a sentence costs more than the softmax before it on a CPU.
    So the vocabulary is read in chunks of ``chunk`` tokens: each chunk's best value, plus
    its beam's score, ranks the chunks, and the k best extensions lie in the k best chunks
    (a chunk outside them has k chunks above it, each holding an extension better than all
    of its own). The top-k then runs over k·chunk values, not K·V.

    Args:
        log_probs: (n, K, V) each beam's next-token log-probabilities.
        scores: (n, K) each beam's summed log-probability so far (-inf: an empty slot).
        k: how many extensions.
        chunk: tokens a chunk.
    """
    n, K, V = log_probs.shape
    pad = -V % chunk
    if pad:  # the last chunk filled up with impossible tokens
        log_probs = F.pad(log_probs, (0, pad), value=float("-inf"))
    C = (V + pad) // chunk  # chunks a beam
    blocks = log_probs.reshape(n, K * C, chunk)
    chunk_scores = scores.repeat_interleave(C, dim=1)  # (n, K·C): the beam's score
    m = min(k, K * C)
    chosen = (blocks.amax(-1) + chunk_scores).topk(m, dim=1).indices  # (n, m) in K·C
    values = blocks.gather(1, chosen.unsqueeze(-1).expand(n, m, chunk))  # (n, m, chunk)
    values = values + chunk_scores.gather(1, chosen).unsqueeze(-1)
    top_scores, where = values.view(n, m * chunk).topk(k, dim=1)  # (n, k)
    picked = chosen.gather(1, where // chunk)  # (n, k): the chunk of each
    token = (picked % C) * chunk + where % chunk
    # an impossible pick (-inf: fewer than k possible extensions) may sit in the padding
    return top_scores, picked // C, token.clamp_(max=V - 1)


def _block_repeats(log_probs: Tensor, prefixes: Tensor, n: int) -> None:
    """Set to -inf, in place, each row's log-probability (rows, V) of every token that would
    complete an n-gram the row's prefix (rows, t + 1; BOS first) already holds."""
    for row, tokens in enumerate(prefixes[:, 1:].tolist()):
        if len(tokens) < n - 1:
            continue
        last = tuple(tokens[len(tokens) - n + 1 :])
        banned = [
            tokens[i + n - 1]
            for i in range(len(tokens) - n + 1)
            if tuple(tokens[i : i + n - 1]) == last
        ]
        if banned:
            log_probs[row, banned] = float("-inf")


def _expand(state, K: int, B: int, device: torch.device):
    """(state with each sentence's row repeated for its K beams, whether it is grouped).
    A state that offers ``expand_beams`` shares per-sentence data among the beams; then its
    ``reorder`` takes the kept sentences as a second argument."""
    if hasattr(state, "expand_beams"):
        return state.expand_beams(K), True
    return state.reorder(torch.arange(B, device=device).repeat_interleave(K)), False


def _stay(alive: list[int], done: set[int], group: int) -> list[int]:
    """Which of the batch's sentences (indices into ``alive``) decode on: those not done,
    plus as many done ones as fill their number up to a multiple of ``group`` (all of them
    when that is no fewer than the batch has now)."""
    live = [i for i, b in enumerate(alive) if b not in done]
    if not live:
        return []
    size = -(-len(live) // group) * group  # rounded up to a multiple of group
    if size >= len(alive):
        return list(range(len(alive)))
    spare = [i for i, b in enumerate(alive) if b in done][: size - len(live)]
    return sorted(live + spare)


def _finish(
    finished: list[list[Hypothesis]],
    alive: list[int],
    done: set[int],
    prefixes: Tensor,
    top_scores: Tensor,
    beam: Tensor,
    is_eos: Tensor,
    eos_id: int,
    t: int,
    K: int,
    penalty,
) -> None:
    """Move the EOS candidates ranked within the top K into the finished lists. What they
    need reaches the host in two copies a step: on a GPU each copy waits for the device, and
    a copy per hypothesis made about twenty a step."""
    eos = is_eos[:, :K].nonzero()  # (E, 2): sentence, rank; its size is known on the host
    if not len(eos):
        return
    i, j = eos.unbind(1)
    scored = torch.stack([i.to(top_scores.dtype), top_scores[i, j]], 1).tolist()
    tokens = prefixes[i * K + beam[i, j], 1:].tolist()
    lp = penalty(t + 1)
    for (sentence, log_prob), ids in zip(scored, tokens):
        if log_prob == float("-inf") or alive[int(sentence)] in done:
            continue
        finished[alive[int(sentence)]].append(Hypothesis(ids + [eos_id], log_prob, log_prob / lp))
