"""A trained text run from Python (``transduce.load(RUN)`` gives one): a classifier or a
tagger on the encoder alone.

::

    model = transduce.load("runs/trec")
    model.classify("How far is the moon ?")   # {"label": "NUM", "probabilities": {...}}
    model = transduce.load("runs/upos")
    model.tag("I saw her duck")               # [("I", "PRON"), ("saw", "VERB"), ...]
    transduce.load("runs/wnut").entities("I live in New York")  # [{"type", "text", ...}]
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from transduce import runs
from transduce.api.loading import cpu_float32_only
from transduce.config import apply_mapping
from transduce.data.labelled import Sentences, Tagged
from transduce.data.tokenizer import SubwordTokenizer
from transduce.errors import UserError
from transduce.evaluation.entities import spans
from transduce.nn.encoder_only import pooled_rows
from transduce.tasks.text.config import TextConfig
from transduce.tasks.text.data import IGNORE, encode_for, read
from transduce.tasks.text.task import (
    Outside,
    batch_of,
    build_text_model,
    entity_rules,
    predict,
    scores,
    word_tags,
)

POOLED = {"cls": "[CLS]", "mean": "mean", "max": "max"}  # the pooled row's name in a view

log = logging.getLogger("transduce.runs")  # "using CHECKPOINT", as a translator says


class TextModel:
    """A text run's model (its averaged checkpoint if ``transduce average`` wrote one, else
    its best, else its newest), its tokenizer and its labels.

    Args:
        path: the run directory, or one of its checkpoints.
        verbose: say which checkpoint is used (on the "transduce" logger).
    """

    def __init__(self, path: str | Path, verbose: bool = False) -> None:
        checkpoint, self.run_dir = runs.find_checkpoint(path)
        state = runs.load_checkpoint(checkpoint, "text")
        if verbose:
            log.warning(f"transduce: using {checkpoint}")
        try:
            self.cfg = apply_mapping(TextConfig(), state["model_config"], str(checkpoint))
            self.labels = list(state["extra"]["labels"])
        except (KeyError, TypeError) as error:
            raise UserError(f"{checkpoint}: not a text checkpoint ({error} missing)") from None
        self.tokenizer = SubwordTokenizer(self.run_dir / runs.TOKENIZER)
        if state.get("tokenizer") != self.tokenizer.fingerprint:
            raise UserError(
                f"{self.run_dir / runs.TOKENIZER}: not the tokenizer {checkpoint} was trained with"
            )
        self.model = runs.build_model(
            checkpoint,
            state,
            lambda _: build_text_model(self.cfg, len(self.tokenizer), len(self.labels)),
        ).eval()
        kept = state["extra"].get("scheme_kept", True)  # runs before it was recorded: BIO
        self._rules = entity_rules(self.cfg, self.labels, kept)
        bias = float(state["extra"].get("outside_bias", 0.0))  # chosen on validation
        self._outside = Outside(self.labels.index("O"), bias) if bias else None

    def __repr__(self) -> str:
        return f"TextModel({str(self.run_dir)!r}: {self.describe()})"

    def describe(self) -> str:
        if self.cfg.task == "mlm":
            return f"masked language model over {len(self.tokenizer)} subwords"
        what = {"classify": "classifier", "tag": "tagger", "entities": "entity tagger"}
        found = f"{what[self.cfg.task]} over {len(self.labels)} labels"
        if self.cfg.members > 1:  # the attention view shows one of them
            found += f", {self.cfg.members} encoders (attention: the first's)"
        return found

    def classify(self, text: str | list[str]) -> dict | list[dict]:
        """The label of ``text`` (or of each of a list) and every label's probability."""
        self._for("classify", "classify")
        texts = [text] if isinstance(text, str) else list(text)
        found = Sentences(texts, [self.labels[0]] * len(texts), list(range(1, len(texts) + 1)))
        best, probabilities = predict(self.model, self._encode(found))
        out = [
            {
                "label": self.labels[k],
                "probabilities": {n: round(p, 6) for n, p in zip(self.labels, row)},
            }
            for k, row in zip(best, probabilities)
        ]
        return out[0] if isinstance(text, str) else out

    def tag(self, text: str | list[str]) -> list[tuple[str, str]]:
        """Each word of ``text`` (split at spaces, or given as a list) and its tag."""
        self._for("tag", "tag", "entities")
        words = text.split() if isinstance(text, str) else list(text)
        if not words:
            return []
        found = Tagged([words], [[self.labels[0]] * len(words)], [1])
        tags, _ = predict(self.model, self._encode(found), rules=self._rules, outside=self._outside)
        return list(zip(words, [self.labels[t] for t in tags[0]]))

    def entities(self, text: str | list[str]) -> list[dict]:
        """The entities of ``text``: ``type``, ``text`` and the ``start`` and ``end`` word
        (end included), by conlleval's reading of the predicted BIO tags."""
        self._for("entities", "entities")
        tagged = self.tag(text)
        words = [w for w, _ in tagged]
        return [
            {"type": kind, "text": " ".join(words[a : b + 1]), "start": a, "end": b}
            for kind, a, b in spans([t for _, t in tagged])
        ]

    @torch.no_grad()
    def attention(self, text: str, layer: int = -1) -> dict:
        """What the encoder attends to in ``text`` at ``layer`` (default the last), per
        head, over its subwords (``columns``): for a classifier, the pooled position's
        row (the ``[CLS]`` token's; with mean pooling the mean of the real tokens' rows;
        with max pooling each token's row weighted by the share of features it gave the
        pooled vector); for a tagger, each word's row, at the subword its tag is read at.
        ``weights`` are indexed ``[head][row][column]``."""
        self._for("attention", "classify", "tag", "entities")
        words = text.split()
        if not words:
            raise UserError("give a sentence to explain")
        if self.cfg.task == "classify":
            found = Sentences([text], [self.labels[0]], [1])
        else:
            found = Tagged([words], [[self.labels[0]] * len(words)], [1])
        encoded = self._encode(found)
        layers = self.cfg.model.num_encoder_layers
        if not -layers <= layer < layers:
            raise UserError(f"layer must be between 0 and {layers - 1}, not {layer}")
        ids, _, chars = batch_of(encoded, [0], self.model.per_token)
        out = self.model(ids, need_weights=True, chars=chars)
        weights = out.weights[layer][0].float()  # (H, T, T)
        columns = ["[CLS]"] + self.tokenizer.pieces(encoded.ids[0][1:])
        if self.cfg.task == "classify":
            best = int(out.logits[0].argmax())
            rows = pooled_rows(weights, out.hidden[0], self.cfg.pooling)
            names = [f"{POOLED[self.cfg.pooling]} → {self.labels[best]}"]
        else:
            speaks = [k for k, t in enumerate(encoded.labels[0]) if t != IGNORE]
            tags = word_tags(out.logits[0][speaks].float(), self._rules, self._outside)  # as tag()
            rows = weights[:, speaks]
            names = [f"{w} ({self.labels[t]})" for w, t in zip(words, tags)]
        return {
            "model": self.describe(),
            "layout": "tokens",
            "layer": layer % layers,
            "layers": layers,
            "rows": names,
            "columns": columns,
            "weights": [[[round(float(v), 5) for v in row] for row in head] for head in rows],
        }

    def test(self, path: str | Path | None = None) -> dict:
        """The scores on ``path`` (by default the run's ``test`` file), as :meth:`score`
        gives them, written to RUN/test_results.json."""
        path = path or self.cfg.test
        if not path:
            self._for("test", "classify", "tag", "entities")
            raise UserError(f"{self.run_dir} was trained without test=; give the test file")
        result = self.score(path, "test")
        runs.write_json(self.run_dir, runs.TEST_RESULTS, result)
        return result

    def score(self, path: str | Path, method: str = "score") -> dict:
        """The scores on the labelled file ``path``, in the run's format: accuracy, and for
        entities the entity-level precision, recall and F1 (nothing is written)."""
        self._for(method, "classify", "tag", "entities")
        found = read(self.cfg, str(path))
        encoded = self._encode(found, str(path))
        predicted, _ = predict(self.model, encoded, rules=self._rules, outside=self._outside)
        result = {"task": self.cfg.task, "file": str(path)}
        result.update(scores(self.cfg.task, self.labels, encoded, predicted))
        return result

    def _encode(self, found, source: str = "<text>"):
        return encode_for(self.cfg, self.tokenizer, found, self.labels, source)

    def _for(self, method: str, *tasks: str) -> None:
        if self.cfg.task not in tasks:
            offered = {
                "classify": "classify()",
                "tag": "tag()",
                "entities": "entities(), tag()",
                "mlm": "nothing but its encoder: fine-tune it with init=RUN",
            }
            raise UserError(
                f"{self.run_dir} is a {self.cfg.task} run: {method}() is for "
                f"{' or '.join(tasks)} runs; it offers {offered[self.cfg.task]}"
            )


def load_text_model(path, device: str, precision: str, verbose: bool) -> TextModel:
    """``transduce.load`` of a text run (on the CPU, in float32)."""
    if isinstance(path, (list, tuple)):
        raise UserError(f"{', '.join(map(str, path))}: text runs load one at a time")
    cpu_float32_only(path, device, precision, "a text model")
    return TextModel(path, verbose)


EXAMPLES = {  # what the page starts from
    "classify": "How far is the moon from the earth ?",
    "tag": "I saw her duck under the table .",
    "entities": "I flew from New York to London with British Airways .",
    "mlm": "",
}


def describe_text(path: str, model: TextModel) -> dict:
    """/info of a text run."""
    return {
        "kind": model.cfg.task,
        "run": Path(model.run_dir).name,
        "description": model.describe(),
        "labels": model.labels,
        "layers": model.cfg.model.num_encoder_layers,
        "scores": runs.scores(model.run_dir),
        "example": EXAMPLES[model.cfg.task],
    }
