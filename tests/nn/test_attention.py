import math

import pytest
import torch

from transduce.nn import (
    AdditiveAttention,
    ScaledDotProductAttention,
    lengths_to_mask,
    masked_softmax,
    scaled_dot_product_attention,
)


def test_masked_softmax_with_row_lengths_zeroes_masked_keys_and_normalises_the_rest():
    scores = torch.randn(3, 4, 6)
    weights = masked_softmax(scores, valid_lens=torch.tensor([2, 6, 4]))
    for row, n in enumerate([2, 6, 4]):
        assert torch.all(weights[row, :, n:] == 0)
        torch.testing.assert_close(weights[row, :, :n].sum(-1), torch.ones(4))
        torch.testing.assert_close(weights[row, :, :n], torch.softmax(scores[row, :, :n], -1))


def test_masked_softmax_with_per_query_lengths():
    lens = torch.tensor([[1, 2, 3], [3, 3, 1]])
    weights = masked_softmax(torch.randn(2, 3, 3), valid_lens=lens)
    for b in range(2):
        for q in range(3):
            assert torch.all(weights[b, q, lens[b, q] :] == 0)
            assert weights[b, q].sum().item() == pytest.approx(1.0, abs=1e-6)


def test_masked_softmax_with_boolean_mask_equals_lengths():
    scores = torch.randn(2, 3, 5)
    lens = torch.tensor([3, 5])
    torch.testing.assert_close(
        masked_softmax(scores, mask=lengths_to_mask(lens, 5)),
        masked_softmax(scores, valid_lens=lens),
    )


def test_fully_masked_row_gives_zeros_and_finite_gradients():
    scores = torch.randn(2, 2, 4, requires_grad=True)
    mask = torch.tensor(
        [[[True, True, False, False], [False] * 4], [[True] * 4, [True, False, False, False]]]
    )
    weights = masked_softmax(scores, mask=mask)
    assert torch.all(weights[0, 1] == 0)
    assert not torch.isnan(weights).any()
    (weights * torch.randn_like(weights)).sum().backward()
    assert torch.isfinite(scores.grad).all()


def test_masked_softmax_rejects_two_masks():
    with pytest.raises(ValueError):
        masked_softmax(
            torch.randn(1, 1, 2),
            valid_lens=torch.tensor([1]),
            mask=torch.ones(1, 1, 2, dtype=torch.bool),
        )


def test_scaled_dot_product_matches_the_formula():
    q, k, v = torch.randn(2, 3, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 4)
    out, weights = scaled_dot_product_attention(q, k, v)
    expected_w = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(8), dim=-1)
    torch.testing.assert_close(weights, expected_w)
    torch.testing.assert_close(out, expected_w @ v)


def test_scaled_dot_product_module_returns_weights_only_when_asked():
    attention = ScaledDotProductAttention()
    q, k, v = torch.randn(2, 3, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 4)
    out, none = attention(q, k, v, valid_lens=torch.tensor([2, 5]))
    out2, weights = attention(q, k, v, valid_lens=torch.tensor([2, 5]), need_weights=True)
    assert none is None and weights.shape == (2, 3, 5)
    torch.testing.assert_close(out, out2)
    assert torch.all(weights[0, :, 2:] == 0)


def test_additive_attention_handles_different_query_and_key_sizes():
    attention = AdditiveAttention(query_size=20, key_size=2, num_hiddens=8)
    q, k, v = torch.randn(2, 1, 20), torch.randn(2, 10, 2), torch.randn(2, 10, 4)
    out, weights = attention(q, k, v, valid_lens=torch.tensor([2, 6]), need_weights=True)
    assert out.shape == (2, 1, 4) and weights.shape == (2, 1, 10)
    # score(q, k_j) = w_vᵀ tanh(W_q q + W_k k_j), written out for each valid key of row 1
    scores = torch.stack(
        [
            attention.w_v.weight
            @ torch.tanh(attention.W_q.weight @ q[1, 0] + attention.W_k.weight @ k[1, j])
            for j in range(6)
        ]
    ).squeeze(-1)
    assert torch.allclose(weights[1, 0, 3], torch.softmax(scores, 0)[3])
    assert torch.all(weights[0, 0, 2:] == 0) and torch.all(weights[1, 0, 6:] == 0)
    torch.testing.assert_close(out, weights @ v)
    assert all(layer.bias is None for layer in (attention.W_q, attention.W_k, attention.w_v))


def test_gradcheck_masked_softmax():
    scores = torch.randn(2, 3, 4, dtype=torch.double, requires_grad=True)
    mask = torch.tensor([[[True, True, False, True]], [[True, False, False, False]]])
    assert torch.autograd.gradcheck(lambda s: masked_softmax(s, mask=mask), (scores,))


def test_gradcheck_scaled_dot_product_attention():
    q = torch.randn(2, 3, 4, dtype=torch.double, requires_grad=True)
    k = torch.randn(2, 5, 4, dtype=torch.double, requires_grad=True)
    v = torch.randn(2, 5, 3, dtype=torch.double, requires_grad=True)
    mask = lengths_to_mask(torch.tensor([3, 5]), 5)
    assert torch.autograd.gradcheck(
        lambda q, k, v: scaled_dot_product_attention(q, k, v, mask), (q, k, v)
    )


def test_gradcheck_additive_attention():
    attention = AdditiveAttention(query_size=3, key_size=2, num_hiddens=4).double()
    q = torch.randn(2, 2, 3, dtype=torch.double, requires_grad=True)
    k = torch.randn(2, 4, 2, dtype=torch.double, requires_grad=True)
    v = torch.randn(2, 4, 3, dtype=torch.double, requires_grad=True)
    lens = torch.tensor([2, 4])
    assert torch.autograd.gradcheck(lambda q, k, v: attention(q, k, v, lens)[0], (q, k, v))


def test_float_gates_of_zero_and_one_act_as_a_boolean_mask():
    scores = torch.randn(2, 3, 5)
    mask = torch.rand(2, 3, 5) > 0.4
    mask[..., 0] = True  # no fully masked row: those are checked below
    torch.testing.assert_close(
        masked_softmax(scores, mask=mask.float()), masked_softmax(scores, mask=mask)
    )
    # a dropped key scoring far above the kept ones must not underflow them to nothing
    far = torch.tensor([200.0, 0.0, 1.0])
    torch.testing.assert_close(
        masked_softmax(far, mask=torch.tensor([0.0, 1.0, 1.0])),
        masked_softmax(far, mask=torch.tensor([False, True, True])),
    )


def test_float_gates_weigh_each_key_and_a_row_of_zero_gates_stays_zero():
    scores = torch.tensor([[[0.0, 1.0, 2.0], [3.0, 1.0, 0.0]]])
    gates = torch.tensor([[[0.5, 1.0, 0.0], [0.0, 0.0, 0.0]]])
    expected = torch.tensor([0.5, math.e, 0.0]) / (0.5 + math.e)
    weights = masked_softmax(scores, mask=gates)
    torch.testing.assert_close(weights[0, 0], expected)
    assert torch.all(weights[0, 1] == 0)
    scores.requires_grad_()
    gates.requires_grad_()
    (masked_softmax(scores, mask=gates) * torch.tensor([1.0, -2.0, 3.0])).sum().backward()
    assert gates.grad[0, 1].abs().max() <= 3 and torch.isfinite(scores.grad).all()


def test_gradcheck_masked_softmax_with_gates_reaches_dropped_keys():
    """A mask sampled as 0/1 and trained straight-through needs a gradient at its zeros."""
    scores = torch.randn(2, 3, 4, dtype=torch.double, requires_grad=True)
    gates = (torch.rand(2, 3, 4, dtype=torch.double) > 0.5).double()
    gates[..., 0] = 1.0
    gates.requires_grad_()
    assert torch.autograd.gradcheck(lambda s, g: masked_softmax(s, mask=g), (scores, gates))
    (masked_softmax(scores, mask=gates) * torch.randn(2, 3, 4)).sum().backward()
    assert (gates.grad[gates == 0] != 0).all()
