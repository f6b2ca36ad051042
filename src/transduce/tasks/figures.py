"""Every figure of the study notes transduce comes from, regenerated from the library: the
small models some of them show are trained here (with :func:`transduce.training.toy.fit`),
and :mod:`transduce.viz` draws.

Each ``figure_*`` function computes what it draws with the library's own modules, saves a
PNG named after what it shows, and returns the numbers behind it (so tests can check the
numbers, not only that a file exists). :func:`make_figures` draws them all.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from transduce.nn import (
    AdditiveAttention,
    BahdanauSeq2Seq,
    LearnedNadarayaWatson,
    MultiHeadAttention,
    NadarayaWatson,
    TransformerConfig,
    build_transformer,
    masked_softmax,
    padding_mask,
    scaled_dot_product_attention,
    sinusoidal_table,
)
from transduce.training.toy import fit
from transduce.viz.heatmaps import _save, plot_attention, plot_positional_encoding, plt

SEED = 0


def _target(x: torch.Tensor) -> torch.Tensor:
    return 2 * torch.sin(x) + x**0.8


def _regression_data():
    """The study notes' toy regression: 50 noisy samples of 2 sin x + x^0.8 on [0, 5)."""
    g = torch.Generator().manual_seed(SEED)
    x_train = torch.sort(torch.rand(50, generator=g) * 5).values
    y_train = _target(x_train) + torch.normal(0.0, 0.5, (50,), generator=g)
    x_test = torch.arange(0, 5, 0.1)
    return x_train, y_train, x_test


def _regression_figure(x_train, y_train, x_test, pred, weights, title, path):
    x_train, y_train, x_test, pred, weights = (
        t.detach().float().numpy() for t in (x_train, y_train, x_test, pred, weights)
    )
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.plot(x_test, _target(torch.from_numpy(x_test)), label="truth: 2 sin x + x^0.8")
    left.plot(x_test, pred, label="attention pooling")
    left.plot(x_train, y_train, "o", alpha=0.5, label="training samples")
    left.set_xlabel("x")
    left.set_ylabel("y")
    left.legend(fontsize=8)
    image = right.imshow(weights, cmap="Blues", aspect="auto")
    right.set_xlabel("training inputs (keys), sorted")
    right.set_ylabel("test inputs (queries)")
    fig.colorbar(image, ax=right, label="attention weight")
    fig.suptitle(title)
    _save(fig, path)


@torch.no_grad()
def figure_nadaraya_watson_fixed(out: Path) -> dict:
    x_train, y_train, x_test = _regression_data()
    pred, weights = NadarayaWatson(width=1.0)(x_test, x_train, y_train)
    _regression_figure(
        x_train,
        y_train,
        x_test,
        pred,
        weights,
        "Nadaraya–Watson pooling, fixed Gaussian kernel (w = 1)",
        out / "nadaraya_watson_fixed.png",
    )
    return {
        "x_train": x_train,
        "y_train": y_train,
        "x_test": x_test,
        "prediction": pred,
        "weights": weights,
    }


def figure_nadaraya_watson_learned(out: Path, epochs: int = 5) -> dict:
    """w learned by SGD, each training point predicted from the others (leave one out)."""
    x_train, y_train, x_test = _regression_data()
    model = LearnedNadarayaWatson(init_width=1.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    others = ~torch.eye(50, dtype=torch.bool)  # (50, 50): a point is not its own key

    def loss_of():
        pred, _ = model(x_train, x_train, y_train, mask=others)
        return ((pred - y_train) ** 2).sum() / 2

    losses = fit(optimizer, epochs, loss_of)
    with torch.no_grad():
        pred, weights = model(x_test, x_train, y_train)
    _regression_figure(
        x_train,
        y_train,
        x_test,
        pred,
        weights,
        f"Nadaraya–Watson pooling, learned kernel (w = {model.w.item():.2f})",
        out / "nadaraya_watson_learned.png",
    )
    return {"losses": losses, "w": model.w.item(), "prediction": pred, "weights": weights}


@torch.no_grad()
def figure_masked_softmax(out: Path) -> dict:
    scores = torch.rand(2, 2, 4, generator=torch.Generator().manual_seed(SEED))
    valid = torch.tensor([2, 3])
    weights = masked_softmax(scores, valid)  # (2, 2, 4)
    fig, axes = plt.subplots(1, 2, figsize=(8, 2.6))
    for b, ax in enumerate(axes):
        image = ax.imshow(weights[b].numpy(), cmap="Blues", vmin=0, vmax=1)
        ax.set_title(f"example {b + 1}: {valid[b].item()} valid keys")
        ax.set_xlabel("key")
        ax.set_ylabel("query")
    fig.colorbar(image, ax=axes, label="weight")
    fig.suptitle("Masked softmax: keys past the valid length get weight 0")
    _save(fig, out / "masked_softmax.png")
    return {"scores": scores, "valid_lens": valid, "weights": weights}


@torch.no_grad()
def figure_additive_vs_dot_product(out: Path) -> dict:
    torch.manual_seed(SEED)
    queries, keys = torch.randn(1, 3, 8), torch.randn(1, 10, 8)
    values = torch.randn(1, 10, 4)
    valid = torch.tensor([6])
    additive = AdditiveAttention(query_size=8, key_size=8, num_hiddens=16).eval()
    _, a = additive(queries, keys, values, valid_lens=valid, need_weights=True)
    mask = torch.arange(10) < valid[:, None, None]  # (1, 1, 10)
    _, d = scaled_dot_product_attention(queries, keys, values, mask)
    fig, axes = plt.subplots(1, 2, figsize=(10, 2.8))
    for ax, w, name in zip(
        axes, (a, d), ("additive: w_vᵀ tanh(W_q q + W_k k)", "scaled dot product: q·k / √d")
    ):
        image = ax.imshow(w[0].numpy(), cmap="Blues", vmin=0, vmax=1, aspect="auto")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("key (6 of 10 valid)")
        ax.set_ylabel("query")
    fig.colorbar(image, ax=axes, label="weight")
    _save(fig, out / "additive_vs_dot_product.png")
    return {"additive": a[0], "dot_product": d[0], "valid": int(valid)}


def figure_positional_encoding(out: Path) -> dict:
    table = sinusoidal_table(60, 32)
    plot_positional_encoding(table, out / "positional_encoding.png")
    fig, ax = plt.subplots(figsize=(8, 3.2))
    for column in range(6, 10):
        ax.plot(table[:, column].numpy(), label=f"column {column}")
    ax.set_xlabel("position")
    ax.set_ylabel("encoding")
    ax.set_title("Positional encoding columns 6–9: lower frequency further right")
    ax.legend(fontsize=8)
    _save(fig, out / "positional_encoding_curves.png")
    return {"table": table}


@torch.no_grad()
def figure_multi_head_attention(out: Path) -> dict:
    torch.manual_seed(SEED)
    attention = MultiHeadAttention(d_model=32, num_heads=4).eval()
    x = torch.randn(1, 6, 32)
    _, weights = attention(x, x, x, need_weights=True)  # (1, H, 6, 6)
    tokens = [f"x{i}" for i in range(1, 7)]
    plot_attention(
        weights[:, :],
        tokens,
        tokens,
        out / "multi_head_attention.png",
        "Multi-head self-attention: each head weighs the keys its own way",
        ("key", "query"),
    )
    return {"weights": weights[0]}


def _reversal_batch(n: int, generator: torch.Generator):
    """Sequences of 4–7 tokens from 3…11 and their reversals (BOS … EOS), padded with 0."""
    src, tgt = torch.zeros(n, 8, dtype=torch.long), torch.zeros(n, 9, dtype=torch.long)
    for i in range(n):
        length = int(torch.randint(4, 8, (1,), generator=generator))
        seq = torch.randint(3, 12, (length,), generator=generator)
        src[i, :length], src[i, length] = seq, 2
        tgt[i, 0], tgt[i, 1 : length + 1], tgt[i, length + 1] = 1, seq.flip(0), 2
    return src, tgt


def _train_reversal(model, steps: int, lr: float, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)

    def loss_of():
        src, tgt = _reversal_batch(64, generator)
        logits = model(src, tgt[:, :-1], padding_mask(src, 0))
        return torch.nn.functional.cross_entropy(
            logits.flatten(0, 1), tgt[:, 1:].flatten(), ignore_index=0
        )

    model.train()
    fit(torch.optim.Adam(model.parameters(), lr=lr), steps, loss_of)
    model.eval()


SEQUENCE = torch.tensor([[3, 4, 5, 6, 7, 8, 2]])  # six tokens and EOS


def figure_bahdanau(out: Path, steps: int = 300, seed: int = SEED) -> dict:
    """The RNN baseline with the paper's bidirectional encoder, trained to reverse. Read
    forwards only, the annotation at source 6 - t has also read 5 - t, so output t could
    attend to either, and which one training settled on changed with the CPU's rounding; read
    both ways, the annotation of 5 - t is the one that holds word 5 - t on both sides."""
    torch.manual_seed(seed)
    model = BahdanauSeq2Seq(12, 12, embed_size=32, num_hiddens=64, bidirectional=True)
    _train_reversal(model, steps, 5e-3, seed)
    tgt = torch.cat([torch.tensor([[1]]), SEQUENCE[:, :-1].flip(1)], 1)  # BOS + reversal
    with torch.no_grad():
        state = model.start(SEQUENCE, padding_mask(SEQUENCE, 0))
        _, _, weights = model.decode(tgt, state, need_weights=True)  # (1, T, S)
    src_labels = [str(t) for t in SEQUENCE[0, :-1].tolist()] + ["</s>"]
    out_labels = [str(t) for t in tgt[0, 1:].tolist()] + ["</s>"]
    weights = weights.float()  # bfloat16 under autocast
    plot_attention(
        weights[None],
        src_labels,
        out_labels,
        out / "bahdanau_attention.png",
        "Bahdanau attention of the RNN baseline, trained to reverse a sequence",
        ("source token", "output token"),
        ["additive attention"],
    )
    return {"weights": weights[0]}


def figure_transformer(out: Path, steps: int = 300, seed: int = SEED) -> dict:
    torch.manual_seed(seed)
    model = build_transformer(
        TransformerConfig(
            src_vocab_size=12,
            d_model=64,
            d_ff=128,
            num_heads=4,
            num_encoder_layers=2,
            num_decoder_layers=2,
            dropout=0.0,
        )
    )
    _train_reversal(model, steps, 2e-3, seed)
    tgt = torch.cat([torch.tensor([[1]]), SEQUENCE[:, :-1].flip(1)], 1)  # (1, T)
    mask = padding_mask(SEQUENCE, 0)
    with torch.no_grad():
        memory, encoder = model.encode_with_weights(SEQUENCE, mask)
        decoded = model.decode(tgt, memory, mask, need_weights=True)
    src_labels = [str(t) for t in SEQUENCE[0, :-1].tolist()] + ["</s>"]
    in_labels = ["<s>"] + [str(t) for t in tgt[0, 1:].tolist()]
    out_labels = in_labels[1:] + ["</s>"]
    maps = {
        "encoder": torch.stack([w[0] for w in encoder]),
        "decoder": torch.stack([w[0] for w in decoded.self_weights]),
        "cross": torch.stack([w[0] for w in decoded.cross_weights]),
    }
    maps = {name: w.float() for name, w in maps.items()}  # bfloat16 under autocast
    plot_attention(
        maps["cross"],
        src_labels,
        out_labels,
        out / "transformer_cross_attention.png",
        "Transformer cross-attention, trained to reverse: the anti-diagonal",
        ("source token", "output token"),
    )
    plot_attention(
        maps["encoder"],
        src_labels,
        src_labels,
        out / "transformer_encoder_self_attention.png",
        "Transformer encoder self-attention",
        ("key", "query"),
    )
    plot_attention(
        maps["decoder"],
        in_labels,
        in_labels,
        out / "transformer_decoder_self_attention.png",
        "Transformer decoder self-attention: the causal mask's triangle",
        ("key (output so far)", "query"),
    )
    return maps


# name: (what draws it, the files it writes)
FIGURES = {
    "nadaraya_watson_fixed": (figure_nadaraya_watson_fixed, ("nadaraya_watson_fixed.png",)),
    "nadaraya_watson_learned": (figure_nadaraya_watson_learned, ("nadaraya_watson_learned.png",)),
    "masked_softmax": (figure_masked_softmax, ("masked_softmax.png",)),
    "additive_vs_dot_product": (figure_additive_vs_dot_product, ("additive_vs_dot_product.png",)),
    "positional_encoding": (
        figure_positional_encoding,
        ("positional_encoding.png", "positional_encoding_curves.png"),
    ),
    "multi_head_attention": (figure_multi_head_attention, ("multi_head_attention.png",)),
    "bahdanau_attention": (figure_bahdanau, ("bahdanau_attention.png",)),
    "transformer_attention": (
        figure_transformer,
        (
            "transformer_cross_attention.png",
            "transformer_encoder_self_attention.png",
            "transformer_decoder_self_attention.png",
        ),
    ),
}
FILES = tuple(name for _, files in FIGURES.values() for name in files)


def make_figures(out_dir: str | os.PathLike, progress=None) -> dict[str, dict]:
    """Draw every figure into ``out_dir`` (the files of :data:`FILES`); returns the numbers
    behind each. ``progress`` counts files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    found = {}
    for name, (figure, files) in FIGURES.items():
        found[name] = figure(out)
        if progress is not None:
            progress.update(len(files))
    return found
