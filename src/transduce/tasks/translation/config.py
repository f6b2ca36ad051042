"""Every setting of `transduce train`, with defaults for a small model on a laptop CPU."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from transduce.checks import Origin, at_least, in_range, one_of, raise_problems
from transduce.nn import TransformerConfig
from transduce.training.engine_config import EngineConfig

SPM_MODEL_TYPES = ("bpe", "unigram", "char", "word")
MIN_VOCAB = 16  # four special pieces and room for some text

# The "small" preset with room for max_len-token sentences and 64 more positions.
SMALL = TransformerConfig(
    d_model=256,
    d_ff=1024,
    num_heads=4,
    num_encoder_layers=3,
    num_decoder_layers=3,
    dropout=0.1,
    max_len=192,
)


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """A training run. YAML files set these keys; ``key=value`` arguments override them.

    ``model`` is the library's :class:`~transduce.nn.TransformerConfig` (its vocabulary sizes
    and padding id come from the tokenizer: one joint vocabulary, all embeddings tied) and
    ``engine`` the training engine's settings (budgets, accumulation, validation cadence,
    precision, device); their keys may be given bare (``d_model=512``, ``max_steps=100``).

    Data: ``{data_dir}/{train_prefix}.{src_lang}`` and ``.{tgt_lang}`` (and the same for
    ``valid_prefix``). Learning rate: with ``schedule: noam``, ``lr`` multiplies the paper's
    d_model^-0.5 · min(step^-0.5, step · warmup^-1.5); with ``inverse_sqrt`` it is the peak
    rate, reached linearly after ``warmup`` steps and decayed as 1/√step. Training pairs
    longer than ``max_len`` subwords, or with a length ratio over ``max_ratio``, are dropped.
    """

    data_dir: str = "data/multi30k"
    src_lang: str = "en"
    tgt_lang: str = "de"
    train_prefix: str = "train"
    valid_prefix: str = "val"
    vocab_size: int = 8000
    spm_model_type: str = "bpe"
    lowercase: bool = False
    model: TransformerConfig = SMALL
    label_smoothing: float = 0.1
    weight_decay: float = 0.0
    schedule: str = "noam"
    lr: float = 1.0
    warmup: int = 4000
    max_tokens: int = 4096
    max_len: int = 128
    max_ratio: float = 9.0
    bpe_dropout: float = 0.0
    valid_bleu_sentences: int = 0
    engine: EngineConfig = EngineConfig(max_steps=20000, valid_every=1000)

    KIND = "translation"  # the kind of model its runs' checkpoints hold
    PATH_KEYS = ("data_dir",)  # stored absolute, so a run resumes from any directory
    HELP = {
        "data_dir": "folder with PREFIX.LANG files (transduce data multi30k --dest writes one)",
        "src_lang": "source language suffix of the files (e.g. en for train.en)",
        "tgt_lang": "target language suffix of the files",
        "train_prefix": "name of the training files before .LANG",
        "valid_prefix": "name of the validation files before .LANG",
        "vocab_size": "subwords of the joint SentencePiece model trained on both sides",
        "spm_model_type": "SentencePiece algorithm: bpe, unigram, char or word",
        "lowercase": "the tokenizer lowercases all text, as the literature's Multi30k "
        "lc.norm.tok files are: translations come out lowercased, for "
        "lowercased BLEU",
        "label_smoothing": "label smoothing ε of the loss (§5.4)",
        "weight_decay": "AdamW's decoupled weight decay of the weight matrices and "
        "embeddings, times the rate (0: the paper's Adam)",
        "schedule": "learning rate: noam (the paper's, lr multiplies it) or inverse_sqrt "
        "(lr is the peak)",
        "lr": "learning rate: noam's factor, or inverse_sqrt's peak",
        "warmup": "updates of linear warm-up",
        "max_tokens": "target tokens per batch (batches are built by token count)",
        "max_len": "training pairs longer than this many subwords are dropped",
        "max_ratio": "training pairs whose length ratio exceeds this are dropped",
        "bpe_dropout": "BPE-dropout: each epoch segments the training text anew, skipping "
        "each merge with this probability (0: off; 0.1 in Provilkov et al. "
        "2020); needs spm_model_type=bpe",
        "valid_bleu_sentences": "validation sentences translated greedily for valid_bleu (0: all)",
    }

    def model_config(self, vocab_size: int, pad_id: int) -> TransformerConfig:
        """The model for a joint vocabulary of ``vocab_size``: all embeddings tied (§3.4)."""
        return replace(self.model, src_vocab_size=vocab_size, tgt_vocab_size=None, pad_id=pad_id)

    def problems(self) -> list[tuple[str, str]]:
        """(key, what is wrong) for values no run can use."""
        m = self.model
        found = one_of(self, "schedule", ("noam", "inverse_sqrt"))
        found += one_of(m, "norm", ("post", "pre"))
        found += one_of(self, "spm_model_type", SPM_MODEL_TYPES)
        found += m.problems()
        found += at_least(self, MIN_VOCAB, "vocab_size")
        found += at_least(self, 1, "max_tokens", "max_len", "warmup", "max_ratio")
        found += at_least(self, 0, "valid_bleu_sentences")
        found += in_range(self, "label_smoothing", 0, 1)
        found += in_range(self, "bpe_dropout", 0, 1)
        found += in_range(self, "weight_decay", 0, 1)
        if self.bpe_dropout and self.spm_model_type != "bpe":
            found.append(
                ("bpe_dropout", f"bpe_dropout needs spm_model_type=bpe, not {self.spm_model_type}")
            )
        if not 0 < self.lr < math.inf:
            found.append(("lr", f"lr must be a positive number, not {self.lr}"))
        if self.max_tokens < self.max_len + 2:
            found.append(
                (
                    "max_tokens",
                    f"max_tokens={self.max_tokens} cannot hold one "
                    f"sentence of max_len={self.max_len}",
                )
            )
        if m.max_len < self.max_len + 2:
            found.append(
                (
                    "max_len",
                    f"model.max_len={m.max_len} positions cannot hold a "
                    f"sentence of max_len={self.max_len} with its BOS and EOS",
                )
            )
        return found + self.engine.problems()

    def validate(self, origin: Origin | str) -> None:
        """Raise a UserError naming where the faulty value came from."""
        raise_problems(self.problems(), origin)
