"""The translation family's endpoints (translation and demo runs, ensembles, CTranslate2
exports): ``POST /translate``, and but for an export ``POST /attention``, ``POST /explain``
and ``POST /explain/head``. :func:`add_routes` is the ``serve`` of their entry in
:mod:`transduce.families`."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from starlette.exceptions import HTTPException

from transduce.decoding.defaults import resolve
from transduce.decoding.sources import MAX_CHARS
from transduce.decoding.translator import MAX_BEAM
from transduce.serve.app import MAX_SENTENCES, Tools

Sentence = Annotated[str, StringConstraints(max_length=MAX_CHARS)]


class TranslateRequest(BaseModel):
    # strict: true is no beam size, nor 2.0 or "0.6" a number (JSON has types)
    model_config = ConfigDict(extra="forbid", strict=True)
    sentences: list[Sentence] = Field(min_length=1, max_length=MAX_SENTENCES)
    # left out: the model's own decoding (the run's decoding.json, else beam 5 and α 0.6)
    beam: int | None = Field(None, ge=1, le=MAX_BEAM)
    nbest: int = Field(1, ge=1, le=MAX_BEAM)
    lenpen: float | None = Field(None, ge=0, le=5, allow_inf_nan=False)
    no_repeat_ngram: int | None = Field(None, ge=0, le=10)
    early_exit: bool = False


class AttentionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    sentence: Sentence
    beam: int | None = Field(None, ge=1, le=MAX_BEAM)


class ExplainRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    sentence: Sentence
    beam: int | None = Field(None, ge=1, le=MAX_BEAM)
    lenpen: float | None = Field(None, ge=0, le=5, allow_inf_nan=False)


class HeadRequest(ExplainRequest):
    kind: Literal["encoder", "decoder", "cross"]
    layer: int = Field(ge=0)
    head: int = Field(ge=0)
    query: int = Field(ge=0)


def add_routes(app: FastAPI, model, info: dict, tools: Tools) -> None:
    """The endpoints of a translator (what :func:`transduce.load` gave) on ``app``."""

    @app.post("/translate")
    async def translate(body: TranslateRequest):
        """Translations of ``sentences``, one per sentence, in order (``nbest`` > 1: lists
        of {text, score}, best first), and ``warnings``, a list per sentence of what the
        model could not read of it (unknown words, control characters removed)."""
        d = resolve(model.decoding, body.beam, body.lenpen, body.no_repeat_ngram)
        if body.nbest > d.beam:
            raise HTTPException(422, f"nbest must not exceed beam ({d.beam})")
        lines = [" ".join(s.split()) for s in body.sentences]  # a line break is a space
        found = await tools.batcher.translate(
            lines, d.beam, body.nbest, d.lenpen, d.no_repeat_ngram, body.early_exit
        )
        if body.nbest == 1:
            out = [hyps[0][0] for hyps in found]
        else:
            out = [[{"text": t, "score": round(s, 4)} for t, s in hyps] for hyps in found]
        # what the model could not read of each sentence: unknown words, control characters
        warnings = model.notes(lines)
        return {"translations": out, "warnings": warnings, "attention": info["attention"]}

    if info["kind"] == "ctranslate2":  # an export returns no attention
        return

    @app.post("/attention")
    async def attention(body: AttentionRequest):
        """The sentence's tokens and the weights of every layer and head: ``cross``,
        ``encoder`` and ``decoder`` (each [layer][head][query][key])."""
        beam = body.beam or model.decoding.beam
        maps = await tools.in_worker(model.attention, " ".join(body.sentence.split()), beam)
        return maps.to_dict()

    @app.post("/explain")
    async def explain(body: ExplainRequest):
        """The sentence's decoding step by step (``steps``: the beam's hypotheses, their
        most probable next tokens and which candidates continue, finish or fall out), the
        ``nbest``, the attention of the translation (as /attention) and the source's
        ``positions`` (sinusoidal table and token embeddings)."""
        d = resolve(model.decoding, body.beam, body.lenpen, None)
        found = await tools.in_worker(
            model.explain, " ".join(body.sentence.split()), d.beam, d.lenpen
        )
        return found.to_dict()

    @app.post("/explain/head")
    async def explain_head(body: HeadRequest):
        """One head opened up for one query token: q, the keys and values, q·k/√d_k (null
        where masked), the softmax and the weighted sum of the values."""
        d = resolve(model.decoding, body.beam, body.lenpen, None)
        numbers = await tools.in_worker(
            model.head,
            " ".join(body.sentence.split()),
            body.kind,
            body.layer,
            body.head,
            body.query,
            d.beam,
            d.lenpen,
        )
        return numbers.to_dict()
