"""The text family's endpoints: ``POST /classify`` of a classifier, ``POST /tag`` of a
tagger, and ``POST /entities`` (and ``/tag``) of an entity tagger, each taking ``{"texts":
[...]}``; and ``POST /explain/text`` (``{"text": ..., "layer": k}``), what the encoder
attends to. :func:`add_routes` is the ``serve`` of the family's entry in
:mod:`transduce.families`."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from transduce.serve.app import Tools

MAX_TEXTS, MAX_CHARS = 64, 2000


class ExplainRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    text: Annotated[str, StringConstraints(min_length=1, max_length=MAX_CHARS)]
    layer: int = -1


class TextsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    texts: Annotated[
        list[Annotated[str, StringConstraints(min_length=1, max_length=MAX_CHARS)]],
        Field(min_length=1, max_length=MAX_TEXTS),
    ]


def add_routes(app: FastAPI, model, info: dict, tools: Tools) -> None:
    """The endpoints of ``model``'s task on ``app``."""
    task = model.cfg.task
    if task == "mlm":  # a pre-trained encoder: nothing to answer until it is fine-tuned
        return

    @app.post("/explain/text")
    async def explain_text(body: ExplainRequest):
        """What the encoder attends to at a layer: the pooled position's row, or each
        word's (see ``TextModel.attention``)."""
        return await tools.in_worker(model.attention, body.text, body.layer)

    if task == "classify":

        @app.post("/classify")
        async def classify(body: TextsRequest):
            """Each text's label and every label's probability."""
            return {"results": await tools.in_worker(model.classify, body.texts)}

        return

    @app.post("/tag")
    async def tag(body: TextsRequest):
        """Each text's words and their tags."""
        found = await tools.in_worker(lambda: [model.tag(t) for t in body.texts])
        return {"results": [[{"word": w, "tag": t} for w, t in row] for row in found]}

    if task == "entities":

        @app.post("/entities")
        async def entities(body: TextsRequest):
            """Each text's entities: type, text, first and last word."""
            return {
                "results": await tools.in_worker(lambda: [model.entities(t) for t in body.texts])
            }
