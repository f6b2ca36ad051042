"""Heatmaps of attention weights and of the positional-encoding table, saved as PNG."""

from __future__ import annotations

import os
import textwrap
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # files only; never needs a screen
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from torch import Tensor  # noqa: E402

from transduce.io import atomic_path  # noqa: E402


def _save(fig: plt.Figure, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)


def cut(text: str, width: int = 90) -> str:
    """``text`` shortened to ``width`` characters with an ellipsis (for titles)."""
    return text if len(text) <= width else text[: width - 1] + "…"


def wrap(text: str, width: int = 90, lines: int = 3) -> str:
    """``text`` wrapped at spaces into at most ``lines`` lines of ``width`` characters (for
    titles); what does not fit ends in an ellipsis after the last whole word. Only a word
    longer than a line is split."""
    wrapped = textwrap.wrap(text, width) or [""]
    if len(wrapped) > lines:
        last = textwrap.shorten(" ".join(wrapped[lines - 1 :]), width, placeholder=" …")
        wrapped = wrapped[: lines - 1] + [last if last != "…" else cut(wrapped[lines - 1], width)]
    return "\n".join(wrapped)


def plot_attention(
    weights,
    keys: Sequence[str],
    queries: Sequence[str],
    path: str | os.PathLike,
    title: str = "",
    axis_names: tuple[str, str] = ("key", "query"),
    head_names: Sequence[str] | None = None,
) -> None:
    """Save a grid of heatmaps, one per layer (rows) and head (columns).

    Args:
        weights: (layers, H, Q, K) attention weights (tensor or array), e.g. a decoder's
            cross-attention; pass the head mean as H = 1.
        keys: K labels for the x axis (e.g. source tokens).
        queries: Q labels for the y axis (e.g. target tokens).
        path: the PNG to write.
        title: the figure's title (wrapped at spaces to fit).
        axis_names: the x and y axis titles.
        head_names: a title for each column (default "head 1", ...).
    """
    weights = (
        weights.detach().float().cpu().numpy()
        if isinstance(weights, Tensor)
        else np.asarray(weights)
    )
    layers, heads, Q, K = weights.shape
    head_names = head_names or [f"head {h + 1}" for h in range(heads)]
    fig, axes = plt.subplots(
        layers,
        heads,
        squeeze=False,
        figsize=(1.6 + max(0.3 * K, 1.6) * heads, 1.2 + max(0.28 * Q, 1.4) * layers),
    )
    for (layer, head), ax in zip([(n, h) for n in range(layers) for h in range(heads)], axes.flat):
        image = ax.imshow(weights[layer, head], cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_title(f"layer {layer + 1}, {head_names[head]}", fontsize=8)
        bottom, left = layer == layers - 1, head == 0
        ax.set_xticks(
            range(K), [cut(k, 14) for k in keys] if bottom else [""] * K, rotation=90, fontsize=7
        )
        ax.set_yticks(range(Q), [cut(q, 14) for q in queries] if left else [""] * Q, fontsize=7)
        if bottom:
            ax.set_xlabel(axis_names[0], fontsize=8)
        if left:
            ax.set_ylabel(axis_names[1], fontsize=8)
    fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
    # at most 9 characters of 10-point text per inch: a long title never widens the figure
    # anchored at the top edge and growing upwards, so a wrapped title never covers a panel
    fig.suptitle(wrap(title, min(90, int(fig.get_figwidth() * 9))), fontsize=10, y=1.0, va="bottom")
    _save(fig, path)


def plot_positional_encoding(table: Tensor, path: str | os.PathLike) -> None:
    """Save the sinusoidal table (positions × dimensions) as a heatmap.

    Args:
        table: (max_len, d_model), e.g. ``sinusoidal_table(64, 128)``.
        path: the PNG to write.
    """
    fig, ax = plt.subplots(figsize=(8, 4.5))
    image = ax.imshow(table.cpu().numpy(), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    ax.set_xlabel("encoding dimension (even: sin, odd: cos)")
    ax.set_ylabel("position")
    ax.set_title(f"Sinusoidal positional encoding, d_model = {table.shape[1]} (paper §3.5)")
    fig.colorbar(image, ax=ax, label="encoding value (sin or cos, −1 to 1)")
    _save(fig, path)
