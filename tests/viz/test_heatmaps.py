import matplotlib.image
import torch

from transduce.nn import sinusoidal_table
from transduce.viz import plot_attention, plot_positional_encoding


def test_attention_grid_is_a_png_with_one_panel_per_layer_and_head(tmp_path):
    weights = torch.softmax(torch.randn(2, 3, 4, 5), -1)
    path = tmp_path / "attention.png"
    plot_attention(weights, list("abcde"), list("wxyz"), path, title="t")
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[1] > image.shape[0]  # 3 heads wide, 2 layers tall
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attention.png"]


def test_positional_encoding_png_draws_the_table_positions_down(tmp_path, monkeypatch):
    import matplotlib.axes
    import numpy as np

    drawn = []
    imshow = matplotlib.axes.Axes.imshow
    monkeypatch.setattr(
        matplotlib.axes.Axes,
        "imshow",
        lambda self, data, **k: (drawn.append(np.asarray(data)), imshow(self, data, **k))[1],
    )
    table = sinusoidal_table(32, 16)
    path = tmp_path / "pe.png"
    plot_positional_encoding(table, path)
    np.testing.assert_array_equal(drawn[0], table.numpy())  # (positions, dimensions)
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 100 and image.shape[1] > image.shape[0]  # 8 by 4.5 inches
    assert image[..., :3].std() > 0.1  # a drawing, not a blank page


def test_a_long_output_does_not_widen_the_figure(tmp_path):
    """An unconverged demo model writes 24 morphemes: the title is cut, so the PNG keeps the
    width its panels need."""
    weights = torch.softmax(torch.randn(2, 4, 25, 6), dim=-1)
    short, long = tmp_path / "short.png", tmp_path / "long.png"
    plot_attention(weights, list("abcdef"), [f"q{i}" for i in range(25)], short, "a → b")
    plot_attention(
        weights,
        list("abcdef"),
        [f"q{i}" for i in range(25)],
        long,
        "cross-attention: " + "einhundertdreiundzwanzig" * 20,
    )
    assert matplotlib.image.imread(long).shape[1] == matplotlib.image.imread(short).shape[1]


def test_positional_encoding_colour_bar_is_labelled(tmp_path, monkeypatch):
    import matplotlib.figure

    labels = []
    original = matplotlib.figure.Figure.colorbar
    monkeypatch.setattr(
        matplotlib.figure.Figure,
        "colorbar",
        lambda self, *a, **k: (labels.append(k.get("label")), original(self, *a, **k))[1],
    )
    plot_positional_encoding(sinusoidal_table(16, 8), tmp_path / "pe.png")
    assert labels and labels[0] and "encoding value" in labels[0]


def test_forecast_attention_says_it_averages_heads_and_keeps_a_uniform_map_pale(
    tmp_path, monkeypatch
):
    from datetime import datetime, timedelta

    import matplotlib.axes
    import numpy as np

    from transduce.viz.forecast import plot_cross_attention

    seen = {}
    imshow = matplotlib.axes.Axes.imshow
    titles = []
    set_title = matplotlib.axes.Axes.set_title
    monkeypatch.setattr(
        matplotlib.axes.Axes,
        "imshow",
        lambda self, *a, **k: (seen.update(k), imshow(self, *a, **k))[1],
    )
    monkeypatch.setattr(
        matplotlib.axes.Axes,
        "set_title",
        lambda self, t, *a, **k: (titles.append(t), set_title(self, t, *a, **k))[1],
    )
    L, K, H = 48, 4, 12
    weights = np.full((K + H, L), 1 / L) + np.random.default_rng(0).normal(0, 1e-4, (K + H, L))
    dates = [datetime(2021, 1, 1) + timedelta(hours=i) for i in range(L + H)]
    plot_cross_attention(weights, K, tmp_path / "a.png", "run", heads=4, dates=dates)
    assert seen["vmin"] == 0 and seen["vmax"] >= 5 / L  # noise around 1/L stays pale
    assert "mean of 4 heads" in titles[-1]
    left, right, bottom, top = seen["extent"]  # on the dates of the forecast's time axis
    import matplotlib.dates as mdates

    assert left < mdates.date2num(dates[0]) < right and top < bottom


def test_a_long_title_is_wrapped_between_words(tmp_path, monkeypatch):
    """`transduce attention` titles a figure with the sentence and its translation: a long
    one was cut mid-word; it wraps at spaces, and only what fits on three lines is kept."""
    import matplotlib.figure

    titles = []
    original = matplotlib.figure.Figure.suptitle
    monkeypatch.setattr(
        matplotlib.figure.Figure,
        "suptitle",
        lambda self, t, **k: (titles.append(t), original(self, t, **k))[1],
    )
    weights = torch.softmax(torch.randn(1, 1, 3, 3), dim=-1)
    sentence = "a man in an orange hat starring at something while his dog waits "
    plot_attention(weights, list("abc"), list("xyz"), tmp_path / "a.png", sentence.strip())
    plot_attention(weights, list("abc"), list("xyz"), tmp_path / "b.png", sentence * 8)
    words = sentence.split()
    for title in titles:
        lines = title.split("\n")
        assert 1 < len(lines) <= 3
        assert all(w in words for line in lines for w in line.split() if w != "…"), lines
    assert titles[0].split() == words and titles[1].endswith("…")
