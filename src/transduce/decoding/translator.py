"""Text in, text out: a trained model with its tokenizer, batched and in input order."""

from __future__ import annotations

import numbers
from typing import Sequence

import torch

from transduce.data.batching import collate, token_batches
from transduce.data.tokenizer import SubwordTokenizer
from transduce.decoding.beam import beam_search
from transduce.decoding.defaults import PAPER, Decoding, lenpen_ok, resolve, search_options
from transduce.decoding.explain import Explanation, HeadNumbers, explain, head_numbers
from transduce.decoding.greedy import greedy_search
from transduce.decoding.inspect import AttentionMaps, attention_maps
from transduce.decoding.sources import (
    EXTRA_OUTPUT,
    encode_sources,
    read_sources,
    sentence_case,
    without_controls,
)
from transduce.device import autocast
from transduce.errors import UserError
from transduce.nn import Transformer, padding_mask
from transduce.nn.int8 import quantize_linears
from transduce.nn.packed import PackedLinear

MAX_BEAM = 16  # a wider beam is refused everywhere (the CLI, the Python API, the server)
# With packed layers (bfloat16 or float32) a done sentence waits in the batch until the
# rest fit in a multiple of this (beam_search's group): oneDNN builds a kernel for each new
# batch size of each layer shape (about 1 ms each in bfloat16, 0.7 ms in float32 on an
# AVX2 EPYC), and a search that drops its sentences one by one meets ~90 sizes. Unpacked
# layers (MKL) build none, and only lose by the wait.
PACKED_GROUP = 4
# source tokens × beam a batch: on the 2-core Sapphire Rapids of the speed results, with the
# groups above, 12,000 translated faster than 6,000 (the sweep in benchmarks/speed); more
# did not. CTranslate2 keeps 6,000, its fastest there.
MAX_TOKENS = 12000


class Translation(str):
    """A translation: its text, as a ``str``, and ``warnings``: what the model could not
    read in its source (unknown words, control characters removed, a cut), empty when it
    read all of it."""

    warnings: tuple[str, ...] = ()

    @classmethod
    def of(cls, text: str, warnings: Sequence[str]) -> "Translation":
        out = cls(text)
        out.warnings = tuple(warnings)
        return out


def _strings(lines) -> list[str]:
    """``lines`` as a list of strings, or a TypeError that says what translate() takes."""
    try:
        batch = list(lines)
    except TypeError:
        raise TypeError(
            f"translate() takes a string or a list of strings, not {type(lines).__name__}"
        ) from None
    for i, line in enumerate(batch):
        if not isinstance(line, str):
            raise TypeError(
                f"translate() takes a string or a list of strings; item {i} is "
                f"{type(line).__name__}"
            )
    return batch


def _check_counts(**given: tuple) -> None:
    """Each of ``name=(value, least)`` is None or a whole number of at least ``least``."""
    for name, (value, least) in given.items():
        if value is not None and (
            not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < least
        ):
            raise ValueError(f"{name} must be a whole number of at least {least}, not {value!r}")
    beam = given.get("beam", (None,))[0]
    if beam is not None and beam > MAX_BEAM:
        raise ValueError(f"beam must be at most {MAX_BEAM}, not {beam}")


class TranslateAPI:
    """The friendly call shared by the PyTorch and CTranslate2 translators: strings in,
    strings out. Subclasses provide :meth:`search`. ``decoding``: the settings used when a
    call gives none (the run's ``decoding.json``, else the paper's; see
    :mod:`transduce.decoding.defaults`)."""

    decoding: Decoding = PAPER

    def __repr__(self) -> str:
        model = getattr(self, "model", None)
        size = (
            f"{sum(p.numel() for p in model.parameters()):,} parameters, "
            if hasattr(model, "parameters")
            else ""
        )
        where = ", ".join(
            str(v) for v in (getattr(self, "device", None), getattr(self, "precision", None)) if v
        )
        return f"{type(self).__name__}({size}{where}; {self.decoding.describe()})"

    def translate(
        self,
        lines: str | Sequence[str],
        beam: int | None = None,
        nbest: int = 1,
        lenpen: float | None = None,
        no_repeat_ngram: int | None = None,
        early_exit: bool = False,
    ):
        """Translate one sentence (a string) or a list of them, in order.

        Returns: a string for a string, a list of strings for a list; with ``nbest`` > 1,
        each sentence gives a list of (translation, score) pairs, best first. Each string
        is a :class:`Translation`, whose ``warnings`` say what the model could not read in
        its source (also logged). ``beam`` 1 is
        greedy search; ``lenpen`` is the length penalty α; ``no_repeat_ngram`` N forbids any
        N-gram of subwords twice. Those not given come from :attr:`decoding`.
        ``early_exit`` ends a sentence's beam search at the first step whose best candidate
        is EOS (faster; our engine only).
        """
        one = isinstance(lines, str)
        batch = [lines] if one else _strings(lines)
        _check_counts(beam=(beam, 1), nbest=(nbest, 1), no_repeat_ngram=(no_repeat_ngram, 0))
        if lenpen is not None and not lenpen_ok(lenpen):
            raise ValueError(f"lenpen must be a number of at least 0 such as 0.6, not {lenpen!r}")
        d = resolve(self.decoding, beam, lenpen, no_repeat_ngram)
        if nbest > d.beam:
            raise ValueError(f"nbest {nbest} exceeds the beam size {d.beam}; give a larger beam")
        extra = search_options(d.no_repeat_ngram, early_exit)
        found = self.search(batch, d.beam, d.lenpen, nbest, **extra)
        notes = self.notes(batch)
        out = [
            [(Translation.of(text, warned), score) for text, score in hyps]
            if nbest > 1
            else Translation.of(hyps[0][0], warned)
            for hyps, warned in zip(found, notes)
        ]
        return out[0] if one else out

    def notes(self, lines: Sequence[str]) -> list[list[str]]:
        """For each line, what the model cannot read of it (unknown words, control
        characters, a cut); :meth:`translate` gives them as its results' ``warnings`` and
        logs them."""
        cased = [sentence_case(line) for line in lines]
        return read_sources(self.tokenizer, cased, self.max_source).notes

    def search(
        self,
        lines: Sequence[str],
        beam_size: int = 5,
        alpha: float = 0.6,
        nbest: int = 1,
        max_tokens: int = MAX_TOKENS,
        progress=None,
        lenpen_style: str = "wu",
        no_repeat_ngram: int = 0,
        early_exit: bool = False,
    ) -> list[list[tuple[str, float]]]:
        raise NotImplementedError


class Translator(TranslateAPI):
    """Translate lines with a model and its tokenizer.

    Args:
        model: the Transformer, or an :class:`~transduce.decoding.ensemble.Ensemble` of
            them (moved to ``device`` and put in eval mode here).
        tokenizer: the joint subword tokenizer it was trained with.
        device: where to run.
        precision: how to run: "bf16" (autocast), "fp32", or "int8" (the linear layers'
            weights in int8, the rest in float32, on a CPU: :mod:`transduce.nn.int8`; the
            model is changed in place).
    """

    def __init__(
        self,
        *,
        model: Transformer,
        tokenizer: SubwordTokenizer,
        device: torch.device,
        precision: str,
    ) -> None:
        self.model = model.to(device).eval()
        if precision == "int8":
            quantize_linears(self.model)
        self.tokenizer, self.device, self.precision = tokenizer, device, precision
        positions = model.positions.table.shape[0]
        self.max_source = positions - EXTRA_OUTPUT - 2  # room for EOS and BOS + outputs

    @property
    def packed(self) -> bool:
        """Whether the model's linear layers are packed for oneDNN (then done sentences
        leave a batch in groups; see PACKED_GROUP)."""
        return any(isinstance(m, PackedLinear) for m in self.model.modules())

    @torch.no_grad()
    def search(
        self,
        lines: Sequence[str],
        beam_size: int = 5,
        alpha: float = 0.6,
        nbest: int = 1,
        max_tokens: int = MAX_TOKENS,
        progress=None,
        lenpen_style: str = "wu",
        no_repeat_ngram: int = 0,
        early_exit: bool = False,
    ) -> list[list[tuple[str, float]]]:
        """For each line, ``nbest`` (translation, score) pairs, best first. An empty line gives
        empty translations; a source longer than the model's positions is cut, with a
        warning logged; a line all in capitals is read in sentence case. ``beam_size`` 1 is
        greedy search (score 0). ``no_repeat_ngram`` N > 0 forbids any N-gram of subwords
        twice in an output (beam search). ``early_exit`` ends a sentence's search at the
        first step whose best candidate is EOS (faster; see
        :func:`~transduce.decoding.beam.beam_search`)."""
        ids = encode_sources(
            self.tokenizer, [sentence_case(line) for line in lines], self.max_source
        )
        results: list[list[tuple[str, float]]] = [[("", 0.0)] * nbest for _ in lines]
        todo = [i for i, seq in enumerate(ids) if seq]
        width = max(beam_size, 1)
        for batch in token_batches([len(ids[i]) + 2 for i in todo], max(max_tokens // width, 1)):
            rows = [todo[j] for j in batch]
            tok = self.tokenizer
            src, _ = collate([ids[i] for i in rows], None, tok.pad_id, tok.bos_id, tok.eos_id)
            src = src.to(self.device)
            with autocast(self.device, self.precision):
                outputs = self._search(
                    src, beam_size, alpha, nbest, lenpen_style, no_repeat_ngram, early_exit
                )
            for i, hyps in zip(rows, outputs):
                results[i] = hyps
            if progress is not None:
                progress.update(len(rows))
        return results

    @torch.no_grad()
    def attention(self, sentence: str, beam: int = 5) -> AttentionMaps:
        """Translate ``sentence`` and return its tokens and the attention weights of every
        layer and head (encoder self, decoder self, cross), as
        :class:`~transduce.decoding.inspect.AttentionMaps`. An ensemble has no one set of
        weights: a UserError says to load one of its runs."""
        if not hasattr(self.model, "encode_with_weights"):
            raise UserError(
                "attention maps are those of one model, not of an ensemble; "
                "load one of its runs to see them"
            )
        if not isinstance(sentence, str):
            raise TypeError(
                f"attention() takes one sentence, a string, not {type(sentence).__name__}"
            )
        _check_counts(beam=(beam, 1))
        if not without_controls(sentence)[0].strip():  # control characters are read as nothing
            raise UserError(
                "the sentence is empty (or control characters only); give one to translate "
                "and see its attention"
            )
        return attention_maps(self, sentence, beam)

    @torch.no_grad()
    def explain(
        self, sentence: str, beam: int = 5, lenpen: float = 0.6, top_k: int = 5
    ) -> Explanation:
        """Translate ``sentence`` step by step: the beam at every step (its hypotheses, their
        ``top_k`` next tokens, which candidates continue, finish or fall out), the n-best,
        the attention of the translation and the positional encodings of the source, as an
        :class:`~transduce.decoding.explain.Explanation` (what ``transduce explain`` shows)."""
        self._one_model_sentence(sentence, "explain")
        _check_counts(beam=(beam, 1), top_k=(top_k, 1))
        return explain(self, sentence, beam, lenpen, top_k)

    @torch.no_grad()
    def head(
        self,
        sentence: str,
        kind: str,
        layer: int,
        head: int,
        query: int,
        beam: int = 5,
        lenpen: float = 0.6,
    ) -> HeadNumbers:
        """One head opened up: for the translation of ``sentence``, the attention ``kind``
        ("encoder", "decoder" or "cross"), ``layer`` and ``head`` (from 0) and the query at
        position ``query``, the numbers of softmax(q·kᵀ/√d_k)·V, as
        :class:`~transduce.decoding.explain.HeadNumbers`."""
        self._one_model_sentence(sentence, "head")
        _check_counts(beam=(beam, 1))
        try:
            return head_numbers(self, sentence, kind, layer, head, query, beam, lenpen)
        except ValueError as error:
            raise UserError(str(error)) from None

    def _one_model_sentence(self, sentence, what: str) -> None:
        if not hasattr(self.model, "encode_with_weights"):
            raise UserError(f"{what}() shows one model, not an ensemble; load one of its runs")
        if not isinstance(sentence, str):
            raise TypeError(f"{what}() takes one sentence, a string, not {type(sentence).__name__}")
        if not without_controls(sentence)[0].strip():  # control characters are read as nothing
            raise UserError(
                f"the sentence is empty (or control characters only); give one to {what}"
            )

    def _search(
        self, src, beam_size, alpha, nbest, lenpen_style, no_repeat_ngram=0, early_exit=False
    ):
        tok, mask = self.tokenizer, padding_mask(src, self.tokenizer.pad_id)
        if beam_size == 1 and not no_repeat_ngram:
            limits = mask.reshape(src.shape[0], -1).sum(-1) + EXTRA_OUTPUT  # (B,) as beam's
            out = greedy_search(
                self.model, src, mask, tok.bos_id, tok.eos_id, tok.pad_id, max_len=limits
            )
            return [[(tok.decode(row.tolist()), 0.0)] for row in out]
        found = beam_search(
            self.model,
            src,
            mask,
            tok.bos_id,
            tok.eos_id,
            beam_size,
            alpha,
            nbest,
            extra_len=EXTRA_OUTPUT,
            lenpen_style=lenpen_style,
            no_repeat_ngram=no_repeat_ngram,
            early_exit=early_exit,
            group=PACKED_GROUP if self.packed else 1,
        )
        return [[(tok.decode(h.tokens), h.score) for h in hyps] for hyps in found]
