"""Build a :class:`Transformer` from a typed config; named presets for common sizes."""

from __future__ import annotations

from dataclasses import dataclass, replace

from torch import nn

from transduce.nn.layers import ACTIVATIONS, DecoderLayer, EncoderLayer, PostNorm, PreNorm
from transduce.nn.positional import PositionalEncoding, TokenEmbedding
from transduce.nn.transformer import Decoder, Encoder, Transformer

RESIDUALS = {"post": PostNorm, "pre": PreNorm}


@dataclass(frozen=True, kw_only=True)
class TransformerConfig:
    """Every hyper-parameter of the encoder–decoder model. Defaults are the paper's base model.

    Attributes:
        src_vocab_size: source vocabulary size (0 in a run's config: the task sets it from
            its tokenizer or vocabulary).
        tgt_vocab_size: target vocabulary size; None means one shared (joint) vocabulary, in
            which case source, target and output embeddings are one matrix (§3.4).
        d_model, d_ff, num_heads: sizes (§3.2.2, §3.3).
        num_encoder_layers, num_decoder_layers: N for each stack.
        dropout: P_drop on residuals and on embeddings + positions (§5.4).
        attention_dropout, activation_dropout: extra dropouts the paper does not use.
        activation: the feed-forward's, "relu" (the paper's max(0, ·)) or "gelu".
        norm: "post" (paper) or "pre".
        tie_output: share the target embedding with the pre-softmax layer.
        max_len: longest sequence the positional table covers.
        pad_id: padding token id (zero embedding).
    """

    src_vocab_size: int = 0
    tgt_vocab_size: int | None = None
    d_model: int = 512
    d_ff: int = 2048
    num_heads: int = 8
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    activation: str = "relu"
    norm: str = "post"
    tie_output: bool = True
    max_len: int = 1024
    pad_id: int = 0

    # One line per setting, for --help (a run config may say more about a key in its own HELP).
    HELP = {
        "src_vocab_size": "source vocabulary size (0: set from the task's tokenizer)",
        "tgt_vocab_size": "target vocabulary size (None: one joint vocabulary, all "
        "embeddings tied, §3.4)",
        "d_model": "width of embeddings and of every sub-layer's output (§3.2.2)",
        "d_ff": "inner width of each feed-forward sub-layer (§3.3)",
        "num_heads": "attention heads per layer; must divide d_model (§3.2.2)",
        "num_encoder_layers": "encoder layers N (§3.1)",
        "num_decoder_layers": "decoder layers N (§3.1)",
        "dropout": "dropout on sub-layer outputs and on embeddings + positions (§5.4)",
        "attention_dropout": "dropout on attention weights (not in the paper)",
        "activation_dropout": "dropout after the feed-forward activation (not in the paper)",
        "activation": "feed-forward activation: relu (the paper's) or gelu",
        "norm": "layer norm after each residual (post, the paper's) or before (pre)",
        "tie_output": "share the target embedding with the pre-softmax projection (§3.4)",
        "max_len": "positions the sinusoidal table covers (§3.5)",
        "pad_id": "padding id (set from the task's tokenizer)",
    }

    def problems(self, decoder: bool = True) -> list[tuple[str, str]]:
        """(key, what is wrong) for values no model can be built with, for a run config's
        checks; ``decoder=False`` for encoder-only uses."""
        # written out here (not with transduce.config's helpers): nn imports only torch
        found = [
            (k, f"{k} must be at least 1, not {getattr(self, k)}")
            for k in ("d_model", "d_ff", "num_encoder_layers", "max_len")
            + ("num_decoder_layers",) * decoder
            if not getattr(self, k) >= 1
        ]
        if not self.num_heads >= 1 or self.d_model % self.num_heads:
            found.append(
                ("num_heads", f"num_heads must divide d_model={self.d_model}, not {self.num_heads}")
            )
        for key in ("dropout", "attention_dropout", "activation_dropout"):
            if not 0 <= getattr(self, key) < 1:
                found.append(
                    (key, f"{key} must be at least 0 and below 1, not {getattr(self, key)}")
                )
        if self.activation not in ACTIVATIONS:
            found.append(
                (
                    "activation",
                    f"activation must be one of {', '.join(ACTIVATIONS)}, not {self.activation!r}",
                )
            )
        return found


PRESETS: dict[str, dict] = {
    # Table 3 of the paper.
    "base": dict(
        d_model=512, d_ff=2048, num_heads=8, num_encoder_layers=6, num_decoder_layers=6, dropout=0.1
    ),
    "big": dict(
        d_model=1024,
        d_ff=4096,
        num_heads=16,
        num_encoder_layers=6,
        num_decoder_layers=6,
        dropout=0.3,
    ),
    # CPU sizes: "small" for Multi30k-scale data, "tiny" for toy tasks and tests.
    "small": dict(
        d_model=256, d_ff=1024, num_heads=4, num_encoder_layers=3, num_decoder_layers=3, dropout=0.1
    ),
    "tiny": dict(
        d_model=128, d_ff=256, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, dropout=0.1
    ),
}


def preset(name: str, src_vocab_size: int, **overrides) -> TransformerConfig:
    """The config of a named preset (see ``PRESETS``), with keyword overrides."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return replace(TransformerConfig(src_vocab_size=src_vocab_size, **PRESETS[name]), **overrides)


def build_transformer(config: TransformerConfig) -> Transformer:
    """Assemble and initialise a :class:`Transformer` from ``config``."""
    if config.norm not in RESIDUALS:
        raise ValueError(f"norm must be one of {', '.join(RESIDUALS)}, not {config.norm!r}")
    if config.src_vocab_size < 1:
        raise ValueError(f"src_vocab_size must be at least 1, not {config.src_vocab_size}")
    c = config
    encoder = build_encoder(c)
    decoder = Decoder(
        [DecoderLayer(**layer_args(c)) for _ in range(c.num_decoder_layers)], final_norm(c)
    )
    shared = c.tgt_vocab_size is None
    src_embed = TokenEmbedding(c.src_vocab_size, c.d_model, c.pad_id)
    tgt_embed = src_embed if shared else TokenEmbedding(c.tgt_vocab_size, c.d_model, c.pad_id)
    generator = nn.Linear(c.d_model, tgt_embed.weight.shape[0], bias=False)
    _init_matrices(encoder, decoder, generator)  # embeddings keep their N(0, d^-0.5) init
    if c.tie_output:
        generator.weight = tgt_embed.weight
    positions = PositionalEncoding(c.d_model, c.dropout, c.max_len)
    return Transformer(
        encoder=encoder,
        decoder=decoder,
        src_embed=src_embed,
        tgt_embed=tgt_embed,
        positions=positions,
        generator=generator,
    )


def layer_args(c: TransformerConfig) -> dict:
    """The keyword arguments of each encoder and decoder layer of ``c``."""
    return dict(
        d_model=c.d_model,
        num_heads=c.num_heads,
        d_ff=c.d_ff,
        dropout=c.dropout,
        attention_dropout=c.attention_dropout,
        activation_dropout=c.activation_dropout,
        residual=RESIDUALS[c.norm],
        activation=c.activation,
    )


def final_norm(c: TransformerConfig) -> nn.Module | None:
    """Pre-norm leaves the last residual sum unnormalised, so its stacks end with a
    LayerNorm; the paper's post-norm has none."""
    return nn.LayerNorm(c.d_model) if c.norm == "pre" else None


def build_encoder(c: TransformerConfig) -> Encoder:
    """The encoder stack of ``c`` (uninitialised: its builder initialises it)."""
    return Encoder(
        [EncoderLayer(**layer_args(c)) for _ in range(c.num_encoder_layers)], final_norm(c)
    )


def _init_matrices(*modules: nn.Module) -> None:
    """Xavier-uniform for every weight matrix (the paper does not specify an initialisation;
    this is what its tensor2tensor code and the Annotated Transformer use)."""
    for module in modules:
        for p in module.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
