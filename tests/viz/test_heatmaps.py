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
