"""Every setting of `transduce train`, with defaults for a small model on a laptop CPU."""

from __future__ import annotations

from dataclasses import dataclass

from transduce.errors import UserError
from transduce.nn import TransformerConfig


@dataclass(frozen=True)
class TrainConfig:
    """A training run. YAML files set these keys; ``key=value`` arguments override them.

    Data: ``{data_dir}/{train_prefix}.{src_lang}`` and ``.{tgt_lang}`` (and the same for
    ``valid_prefix``). Learning rate: with ``schedule: noam``, ``lr`` multiplies the paper's
    d_model^-0.5 · min(step^-0.5, step · warmup^-1.5); with ``inverse_sqrt`` it is the peak
    rate, reached linearly after ``warmup`` steps and decayed as 1/√step. Limits of 0 are off.
    """

    data_dir: str = "data/multi30k"
    src_lang: str = "en"
    tgt_lang: str = "de"
    train_prefix: str = "train"
    valid_prefix: str = "val"
    vocab_size: int = 8000
    spm_model_type: str = "bpe"
    d_model: int = 256
    d_ff: int = 1024
    num_heads: int = 4
    num_encoder_layers: int = 3
    num_decoder_layers: int = 3
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    norm: str = "post"
    label_smoothing: float = 0.1
    schedule: str = "noam"
    lr: float = 1.0
    warmup: int = 4000
    max_tokens: int = 4096
    accumulate: int = 1
    clip_norm: float = 0.0
    max_len: int = 128
    max_ratio: float = 9.0
    max_steps: int = 20000
    max_epochs: int = 0
    max_minutes: float = 0.0
    valid_every: int = 1000
    valid_bleu_sentences: int = 0
    keep_last: int = 10
    patience: int = 0
    seed: int = 1
    precision: str = "auto"
    device: str = "auto"
    threads: int = 0

    def model_config(self, vocab_size: int) -> TransformerConfig:
        """The model: one joint vocabulary, so all embeddings are tied (paper §3.4)."""
        return TransformerConfig(
            src_vocab_size=vocab_size, d_model=self.d_model, d_ff=self.d_ff,
            num_heads=self.num_heads, num_encoder_layers=self.num_encoder_layers,
            num_decoder_layers=self.num_decoder_layers, dropout=self.dropout,
            attention_dropout=self.attention_dropout,
            activation_dropout=self.activation_dropout, norm=self.norm,
            max_len=self.max_len + 64)

    def validate(self, source: str) -> None:
        """Raise a UserError naming ``source`` for values no run can use."""
        problems = []
        if self.schedule not in ("noam", "inverse_sqrt"):
            problems.append(f"schedule must be noam or inverse_sqrt, not {self.schedule!r}")
        if self.norm not in ("post", "pre"):
            problems.append(f"norm must be post or pre, not {self.norm!r}")
        if self.precision not in ("auto", "bf16", "fp32"):
            problems.append(f"precision must be auto, bf16 or fp32, not {self.precision!r}")
        if self.d_model % self.num_heads:
            problems.append(f"num_heads={self.num_heads} must divide d_model={self.d_model}")
        for key in ("vocab_size", "max_tokens", "accumulate", "max_len", "valid_every",
                    "keep_last", "warmup"):
            if getattr(self, key) < 1:
                problems.append(f"{key} must be at least 1")
        if self.max_tokens < self.max_len + 2:
            problems.append(f"max_tokens={self.max_tokens} cannot hold one sentence of "
                            f"max_len={self.max_len}")
        if problems:
            raise UserError(f"{source}: {problems[0]}")


# Keys a resumed run may change: how long it trains, and how patiently.
EXTENDABLE = ("max_steps", "max_epochs", "max_minutes", "patience", "threads", "device")
