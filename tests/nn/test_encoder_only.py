"""The encoder on its own with a sequence head or a token head: shapes, masks, pooling, and
a tiny model that learns a rule in both precisions."""

import pytest
import torch

from transduce.nn.builders import TransformerConfig
from transduce.nn.encoder_only import build_encoder_only, pooled_rows

SIZES = dict(d_model=16, d_ff=32, num_heads=2, num_encoder_layers=2, dropout=0.0, max_len=64)


def model(per_token=False, pooling="cls", labels=3, **extra):
    torch.manual_seed(0)
    config = TransformerConfig(src_vocab_size=20, **{**SIZES, **extra})
    return build_encoder_only(config, labels, per_token, pooling).eval()


def tokens():
    return torch.tensor([[1, 5, 6, 7, 0, 0], [1, 8, 9, 10, 11, 12]])  # 0 pads the first


@pytest.mark.parametrize("pooling", ["cls", "mean", "max"])
def test_a_sequence_head_gives_a_label_per_sequence(pooling):
    out = model(pooling=pooling)(tokens(), need_weights=True)
    assert out.logits.shape == (2, 3) and out.hidden.shape == (2, 6, 16)
    assert out.real.tolist() == [[True] * 4 + [False] * 2, [True] * 6]
    assert len(out.weights) == 2 and out.weights[0].shape == (2, 2, 6, 6)
    # no query attends to padding
    assert out.weights[-1][0, :, :, 4:].abs().max() == 0


def test_a_token_head_gives_a_label_per_token():
    out = model(per_token=True, labels=5)(tokens())
    assert out.logits.shape == (2, 6, 5)


@pytest.mark.parametrize("per_token", [False, True])
@pytest.mark.parametrize("pooling", ["cls", "mean", "max"])
def test_padding_changes_nothing_a_real_token_or_the_label_reads(per_token, pooling):
    """More padding, or other ids where the padding is, leave every real position's
    output and the pooled label as they were."""
    m = model(per_token=per_token, pooling=pooling)
    short = torch.tensor([[1, 5, 6, 7]])
    padded = torch.tensor([[1, 5, 6, 7, 0, 0, 0]])
    a, b = m(short), m(padded)
    if per_token:
        torch.testing.assert_close(a.logits, b.logits[:, :4], atol=1e-5, rtol=1e-5)
    else:
        torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(a.hidden, b.hidden[:, :4], atol=1e-5, rtol=1e-5)


def test_a_token_head_read_at_chosen_positions_equals_the_full_heads_rows():
    """The masked language model's head reads only the hidden subwords: the same logits as
    the whole (B, L, K) head's at those positions, in row-major order."""
    m = model(per_token=True, labels=7)
    at = torch.tensor([[False, True, False, True, False, False], [True] + [False] * 4 + [True]])
    full, some = m(tokens()).logits, m(tokens(), at=at).logits
    assert some.shape == (4, 7)
    torch.testing.assert_close(some, full[at])
    torch.testing.assert_close(some[1], full[0, 3])


def test_mean_pooling_averages_the_real_tokens_only():
    m = model(pooling="mean")
    out = m(tokens())
    real = out.hidden[0, :4].mean(0)
    torch.testing.assert_close(m.head(real), out.logits[0], atol=1e-5, rtol=1e-5)


def test_max_pooling_takes_each_features_largest_real_value():
    """Padding never wins the max, even where its outputs are larger than every real
    token's."""
    m = model(pooling="max")
    out = m(tokens())
    hidden = out.hidden.clone()
    hidden[0, 4:] = 1e4  # padding outputs far above the real ones: still not read
    pooled = m.pool(hidden, tokens().ne(0).unsqueeze(1))
    torch.testing.assert_close(pooled[0], out.hidden[0, :4].amax(0))
    torch.testing.assert_close(m.head(pooled), out.logits, atol=1e-5, rtol=1e-5)


def test_the_pooled_row_of_an_explanation():
    """[CLS]: its own row; mean: the mean row; max: each token's row weighted by the
    features it gave the pooled vector (here token 2 gives 3 of 4, token 0 the other)."""
    weights = torch.softmax(torch.randn(2, 3, 3), -1)  # (H, L, L)
    hidden = torch.tensor([[0.0, 0.0, 0.0, 5.0], [1.0, 1.0, 1.0, 1.0], [2.0, 3.0, 4.0, 0.0]])
    torch.testing.assert_close(pooled_rows(weights, hidden, "cls"), weights[:, :1])
    torch.testing.assert_close(pooled_rows(weights, hidden, "mean"), weights.mean(1, True))
    expected = 0.75 * weights[:, 2:3] + 0.25 * weights[:, 0:1]
    torch.testing.assert_close(pooled_rows(weights, hidden, "max"), expected)
    assert torch.allclose(pooled_rows(weights, hidden, "max").sum(-1), torch.ones(2, 1))


def test_bad_sizes_and_poolings_are_refused():
    with pytest.raises(ValueError, match="pooling must be one of cls, mean, max"):
        model(pooling="last")
    with pytest.raises(ValueError, match="num_heads must divide d_model"):
        model(num_heads=3)
    with pytest.raises(ValueError, match="norm must be one of"):
        model(norm="middle")


@pytest.mark.parametrize("per_token", [False, True], ids=["sequence", "token"])
def test_a_tiny_encoder_learns_a_rule(per_token, outcome):
    """Sequence: is token 3 anywhere in it (it must read every position)? Token: is this
    token larger than the one before it (it must read its neighbour)? Accuracy on 512 new
    sequences after 300 updates."""
    torch.manual_seed(outcome.seed(1))
    m = model(per_token=per_token, labels=2, pooling="mean").train()
    optimizer = torch.optim.AdamW(m.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(outcome.seed(2))

    def batch(n=64):
        x = torch.randint(2, 12, (n, 8), generator=generator)
        if per_token:
            y = torch.zeros_like(x)
            y[:, 1:] = (x[:, 1:] > x[:, :-1]).long()
            return x, y
        return x, (x == 3).any(1).long()

    for _ in range(300):
        x, y = batch()
        with outcome.autocast():
            logits = m(x).logits
        loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, -2), y.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    m.eval()
    x, y = batch(512)
    with torch.no_grad(), outcome.autocast():
        accuracy = (m(x).logits.argmax(-1) == y).float().mean().item()
    outcome.check("accuracy", accuracy)
