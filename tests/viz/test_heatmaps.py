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


def test_positional_encoding_png(tmp_path):
    path = tmp_path / "pe.png"
    plot_positional_encoding(sinusoidal_table(32, 16), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_long_output_does_not_widen_the_figure(tmp_path):
    """An unconverged demo model writes 24 morphemes: the title is cut, so the PNG keeps the
    width its panels need."""
    weights = torch.softmax(torch.randn(2, 4, 25, 6), dim=-1)
    short, long = tmp_path / "short.png", tmp_path / "long.png"
    plot_attention(weights, list("abcdef"), [f"q{i}" for i in range(25)], short, "a → b")
    plot_attention(weights, list("abcdef"), [f"q{i}" for i in range(25)], long,
                   "cross-attention: " + "einhundertdreiundzwanzig" * 20)
    assert matplotlib.image.imread(long).shape[1] == matplotlib.image.imread(short).shape[1]


def test_positional_encoding_colour_bar_is_labelled(tmp_path, monkeypatch):
    import matplotlib.figure

    labels = []
    original = matplotlib.figure.Figure.colorbar
    monkeypatch.setattr(matplotlib.figure.Figure, "colorbar", lambda self, *a, **k: (
        labels.append(k.get("label")), original(self, *a, **k))[1])
    plot_positional_encoding(sinusoidal_table(16, 8), tmp_path / "pe.png")
    assert labels and labels[0] and "encoding value" in labels[0]
