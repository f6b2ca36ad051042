"""Heatmaps of attention weights and of the positional-encoding table, saved as PNG."""

from __future__ import annotations

import os
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # files only; never needs a screen
import matplotlib.pyplot as plt  # noqa: E402
from torch import Tensor  # noqa: E402

from transduce.io import atomic_path  # noqa: E402


def _save(fig: plt.Figure, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_attention(
    weights: Tensor,
    keys: Sequence[str],
    queries: Sequence[str],
    path: str | os.PathLike,
    title: str = "",
) -> None:
    """Save a grid of heatmaps, one per layer (rows) and head (columns).

    Args:
        weights: (layers, H, Q, K) attention weights, e.g. a decoder's cross-attention.
        keys: K labels for the x axis (e.g. source tokens).
        queries: Q labels for the y axis (e.g. target tokens).
        path: the PNG to write.
        title: the figure's title.
    """
    layers, heads, Q, K = weights.shape
    fig, axes = plt.subplots(layers, heads, squeeze=False,
                             figsize=(1.2 + 0.32 * K * heads, 0.8 + 0.3 * Q * layers))
    for (layer, head), ax in zip([(l, h) for l in range(layers) for h in range(heads)],
                                 axes.flat):
        image = ax.imshow(weights[layer, head].float().cpu().numpy(), cmap="Reds",
                          vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=8)
        ax.set_xticks(range(K), keys if layer == layers - 1 else [""] * K, rotation=90,
                      fontsize=7)
        ax.set_yticks(range(Q), queries if head == 0 else [""] * Q, fontsize=7)
    fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
    fig.suptitle(title, fontsize=10)
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
    fig.colorbar(image, ax=ax)
    _save(fig, path)
