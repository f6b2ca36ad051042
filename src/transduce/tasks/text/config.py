"""Every setting of `transduce text train`: the encoder on its own with a head, on labelled
sentences (``task=classify``) or tagged words (``tag``: a label a word; ``entities``: BIO
tags scored by entity spans)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from transduce.checks import at_least, in_range, one_of, raise_problems
from transduce.data.labelled import FORMATS, LINES, TAG_FORMATS
from transduce.nn import TransformerConfig
from transduce.nn.encoder_only import POOLINGS
from transduce.training.engine_config import EXTENDABLE as ENGINE_EXTENDABLE
from transduce.training.engine_config import EngineConfig

TASKS = ("classify", "tag", "entities", "mlm")
PIECES = ("first", "last")  # the subword of a word that speaks for it
MASK = "<mask>"  # the masked language model's symbol, kept whole by its tokenizer


@dataclass(frozen=True, kw_only=True)
class TextConfig:
    """A text run. ``train`` (and ``valid``, ``test`` if given) are files of ``format``:
    ``tsv`` (label<TAB>text) or ``trec`` for ``classify``, ``conll`` (token<TAB>tag) or
    ``conllu`` (the word's ``column``: 4 is UPOS) for ``tag`` and ``entities``, ``lines``
    (plain text, a sentence a line) for ``mlm``: BERT's masked-language-model
    pre-training, ``mask_share`` of the subwords hidden and predicted. ``init`` starts a
    run from such a run's (or a labelled run's) tokenizer and encoder (fine-tuning). Without
    ``valid``, a ``valid_share`` of the training file, drawn with the seed, validates.
    Words become SentencePiece subwords (a model of ``vocab_size`` trained on the
    training texts); a word's tag is read at its first subword (or with
    ``piece=last``, its last). ``model`` is the library's
    TransformerConfig (its encoder sizes; the decoder's are unused)."""

    task: str = "classify"
    train: str = ""
    valid: str = ""
    test: str = ""
    format: str = "tsv"
    column: int = 4
    replace_invalid: bool = False
    valid_share: float = 0.1
    vocab_size: int = 4000
    lowercase: bool = False
    max_tokens: int = 128
    pooling: str = "cls"
    piece: str = "first"
    chars: int = 0
    relative: int = 0
    token_dropout: float = 0.0
    outside_weight: float = 1.0
    calibrate: bool = True
    mask_share: float = 0.15
    members: int = 1
    init: str = ""
    model: TransformerConfig = TransformerConfig(
        d_model=128, d_ff=256, num_heads=4, num_encoder_layers=2, dropout=0.1, max_len=512
    )
    batch_size: int = 32
    batch_tokens: int = 0
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup: int = 200
    label_smoothing: float = 0.0
    engine: EngineConfig = field(default_factory=lambda: EngineConfig(max_epochs=20, patience=5))

    KIND = "text"  # the kind of model its runs' checkpoints hold
    PATH_KEYS = ("train", "valid", "test", "init")
    HELP = {
        "task": "classify (a label a sentence), tag (a label a word), entities (BIO tags, "
        "scored by entity spans) or mlm (masked-language-model pre-training on plain text)",
        "mask_share": "mlm: the share of subwords hidden (80% masked, 10% another subword, "
        "10% kept) and predicted",
        "init": "a run whose tokenizer and encoder this run starts from: task=mlm, or "
        "a classifier or tagger trained on other labels (its head is left out)",
        "members": "train this many encoders from different initial weights side by side "
        "and label by the mean of their probabilities (a deep ensemble; each step costs "
        "members x as much)",
        "train": "the training file",
        "valid": "the validation file (empty: valid_share of train)",
        "test": "the test file `text test` scores (it may also be given there)",
        "format": "tsv (label<TAB>text) or trec for classify; conll (token<TAB>tag) or conllu "
        "for tag and entities; lines (a sentence a line) for mlm",
        "column": "conllu: the column that holds the tag (4: UPOS, 5: XPOS)",
        "replace_invalid": "replace bytes that are not UTF-8 (with a warning naming the lines) "
        "instead of stopping",
        "valid_share": "without valid: the share of the training file held out to validate",
        "vocab_size": "SentencePiece subwords trained on the training texts",
        "lowercase": "lowercase the text before it is split into subwords",
        "max_tokens": "subwords a sentence keeps, its label token included (longer ones are cut)",
        "pooling": "classify: cls (the first token's output), mean (over the real tokens) or "
        "max (each feature's largest value over the real tokens)",
        "piece": "tag and entities: the subword of a word that its tag is learned and read "
        "at: first (as BERT's tagger) or last (where English keeps its suffixes)",
        "chars": "filters of a character model of each word (a CNN over its letters, "
        "added to each of its subwords' embeddings; 0: none). Not for mlm",
        "relative": "the farthest distance (in subwords, before or after) of which each "
        "attention head learns a score of its own, added to its scores in every layer "
        "(relative positions beside the sinusoidal ones; 0: none)",
        "token_dropout": "the share of subwords replaced by unk in training (a word "
        "dropout: the model must read a word from its context and its letters)",
        "outside_weight": "entities: the loss's weight on words outside every entity (tag O) "
        "against 1 on entity words; below 1 trades precision for recall",
        "calibrate": "entities: at each validation, choose the number (from -1 to 3) added "
        "to O's log-probability before decoding that gives the best entity F1; the "
        "checkpoint keeps it, and the tagger decodes with it",
        "batch_size": "sentences per batch, drawn at random (without batch_tokens)",
        "batch_tokens": "batches of sentences of similar length instead, each at most this "
        "many subwords with its padding (sorted by length, the batches shuffled; 0: "
        "batch_size sentences drawn at random, padded to the longest)",
        "lr": "AdamW's peak learning rate",
        "weight_decay": "AdamW's weight decay",
        "warmup": "updates over which the rate rises linearly to lr",
        "label_smoothing": "label smoothing of the loss",
    }

    def problems(self) -> list[tuple[str, str]]:
        found = one_of(self, "task", TASKS) + one_of(self, "pooling", POOLINGS)
        found += one_of(self, "piece", PIECES)
        wanted = {"classify": FORMATS, "mlm": (LINES,)}.get(self.task, TAG_FORMATS)
        found += one_of(self, "format", wanted)
        found += in_range(self, "mask_share", 0, 1) + in_range(self, "token_dropout", 0, 1)
        if not 0 < self.outside_weight <= 1:
            found.append(
                ("outside_weight", f"outside_weight must be in (0, 1], not {self.outside_weight}")
            )
        if self.outside_weight != 1 and self.task != "entities":
            found.append(("outside_weight", "outside_weight is for task=entities"))
        if self.task == "mlm" and not self.mask_share > 0:
            found.append(
                ("mask_share", "mask_share must be above 0: mlm learns the hidden subwords")
            )
        if self.task == "mlm" and self.chars:
            found.append(
                (
                    "chars",
                    "chars is for the labelled tasks: a masked word's letters would give "
                    "it away; leave it at 0 for mlm (a fine-tuning run may add it)",
                )
            )
        if self.task == "mlm" and self.members != 1:
            found.append(("members", "members is for the labelled tasks; pre-train one encoder"))
        if self.task == "mlm" and self.init:
            found.append(("init", "init is for fine-tuning a pre-trained run; leave it out"))
        if not self.train:
            found.append(("train", "train is not set; give train=PATH/TO/FILE"))
        found += at_least(self, 1, "vocab_size", "batch_size", "column", "members")
        found += at_least(self, 0, "chars", "relative", "batch_tokens")
        if 0 < self.batch_tokens < self.max_tokens:
            found.append(
                (
                    "batch_tokens",
                    f"batch_tokens={self.batch_tokens} is below max_tokens={self.max_tokens}: "
                    "a batch must hold a sentence of max_tokens subwords; give at least "
                    "that, or 0",
                )
            )
        found += at_least(self, 2, "max_tokens") + at_least(self, 0, "warmup")
        found += in_range(self, "valid_share", 0, 1) + in_range(self, "label_smoothing", 0, 1)
        if not 0 < self.lr < math.inf:
            found.append(("lr", f"lr must be a positive number, not {self.lr}"))
        if self.max_tokens > self.model.max_len:
            found.append(
                (
                    "max_tokens",
                    f"max_tokens={self.max_tokens} is beyond the positions the model "
                    f"covers (max_len={self.model.max_len})",
                )
            )
        return found + self.model.problems(decoder=False) + self.engine.problems()

    def validate(self, origin) -> None:
        raise_problems(self.problems(), origin)


EXTENDABLE = (*ENGINE_EXTENDABLE, "train", "valid", "test")
