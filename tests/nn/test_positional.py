import math

import pytest
import torch

from transduce.nn import PositionalEncoding, TokenEmbedding, sinusoidal_table


@pytest.mark.parametrize("d_model", [8, 7])
def test_table_matches_the_papers_formula(d_model):
    table = sinusoidal_table(50, d_model)
    for pos in (0, 1, 7, 49):
        for dim in range(d_model):
            angle = pos / 10000 ** ((dim - dim % 2) / d_model)  # 2i = dim rounded down to even
            expected = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
            assert table[pos, dim].item() == pytest.approx(expected, abs=1e-6)


def test_position_zero_is_sin0_cos0():
    row = sinusoidal_table(3, 6)[0]
    assert row.tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]


def test_encoding_adds_the_table_from_the_offset():
    encoding = PositionalEncoding(d_model=4, dropout=0.0, max_len=10).eval()
    x = torch.randn(2, 3, 4)
    torch.testing.assert_close(encoding(x, offset=5), x + sinusoidal_table(10, 4)[5:8])
    with pytest.raises(ValueError, match="max_len"):
        encoding(x, offset=8)


def test_dropout_after_adding_positions():
    encoding = PositionalEncoding(d_model=16, dropout=0.5).train()
    out = encoding(torch.zeros(1, 20, 16))
    zeros = (out == 0).float().mean().item()
    assert 0.3 < zeros < 0.7  # about half the sums are dropped…
    kept = out != 0
    table = sinusoidal_table(20, 16)
    torch.testing.assert_close(out[kept], 2 * table[None].expand_as(out)[kept])  # …the rest ×2


def test_token_embedding_is_scaled_by_sqrt_d_model_and_pad_is_zero():
    embedding = TokenEmbedding(10, 16, padding_idx=0)
    tokens = torch.tensor([[0, 3]])
    out = embedding(tokens)
    assert torch.all(out[0, 0] == 0)
    torch.testing.assert_close(out[0, 1], embedding.weight[3] * 4.0)
