"""The LogSparse Transformer (Li et al. 2019): its masks against hand-built ones, causality,
its cell count, the sparse path against the dense one, and kernel 1 as canonical attention."""

import math

import pytest
import torch

from transduce.nn.forecasting.logsparse import (
    ConvSelfAttention,
    LogSparseForecaster,
    _ShiftedScores,
    _ShiftedSum,
    key_offsets,
    logsparse_mask,
)
from transduce.nn.masks import subsequent_mask
from transduce.nn.multi_head_attention import MultiHeadAttention


def hand(length, rows):
    mask = torch.zeros(length, length, dtype=torch.bool)
    for i, keys in rows.items():
        mask[i, keys] = True
    return mask


def test_the_logsparse_mask_is_the_papers_for_small_lengths():
    # step l attends to itself and to l − 1, l − 2, l − 4, …
    expected = hand(
        9,
        {
            0: [0],
            1: [1, 0],
            2: [2, 1, 0],
            3: [3, 2, 1],
            4: [4, 3, 2, 0],
            5: [5, 4, 3, 1],
            6: [6, 5, 4, 2],
            7: [7, 6, 5, 3],
            8: [8, 7, 6, 4, 0],
        },
    )
    assert torch.equal(logsparse_mask(9), expected)
    # local window 3: the three steps up to itself, then 1, 2, 4 … back from the window
    local = hand(
        8,
        {
            0: [0],
            1: [0, 1],
            2: [0, 1, 2],
            3: [1, 2, 3, 0],
            4: [2, 3, 4, 1, 0],
            5: [3, 4, 5, 2, 1],
            6: [4, 5, 6, 3, 2, 0],
            7: [5, 6, 7, 4, 3, 1],
        },
    )
    assert torch.equal(logsparse_mask(8, "local", window=3), local)
    # restart every 4: the pattern restarts at 4; step 4 reaches back LogSparse-wise
    restart = hand(
        8,
        {
            0: [0],
            1: [1, 0],
            2: [2, 1, 0],
            3: [3, 2, 1],
            4: [4, 3, 2, 0],
            5: [5, 4],
            6: [6, 5, 4],
            7: [7, 6, 5],
        },
    )
    assert torch.equal(logsparse_mask(8, "restart", restart=4), restart)
    assert torch.equal(logsparse_mask(6, "full"), subsequent_mask(6)[0])


@pytest.mark.parametrize(
    "pattern, extra", [("logsparse", {}), ("local", {"window": 4}), ("restart", {"restart": 16})]
)
def test_no_step_sees_the_future(pattern, extra):
    mask = logsparse_mask(50, pattern, **extra)
    assert not torch.triu(mask, 1).any() and mask.diagonal().all()


@pytest.mark.parametrize("length", [64, 256, 1024, 4096])
def test_cells_grow_as_l_log_l_per_layer_and_log_l_layers_reach_every_earlier_step(length):
    mask = logsparse_mask(length)
    cells = int(mask.sum())
    log = math.log2(length)
    assert cells <= length * (log + 1)  # O(L log L) per layer
    assert cells * math.ceil(log) <= length * (log + 1) ** 2  # O(L (log L)²) for log L layers
    assert cells < length * (length + 1) / 2 / 4  # far below the dense triangle
    if length <= 256:  # reach: the mask's ⌈log₂ L⌉-th boolean power is the causal triangle
        reach = mask.clone()
        for _ in range(math.ceil(log) - 1):
            reach = (reach.float() @ mask.float()) > 0
        assert torch.equal(reach, subsequent_mask(length)[0])


def test_the_sparse_path_equals_the_dense_one():
    torch.manual_seed(0)
    attention = ConvSelfAttention(d_model=16, num_heads=4, kernel=3).eval()
    x = torch.randn(2, 37, 16)
    for mask in (
        logsparse_mask(37),
        logsparse_mask(37, "local", window=5),
        logsparse_mask(37, "restart", restart=8),
    ):
        dense, weights = attention(x, mask, None, need_weights=True)
        sparse, _ = attention(x, mask, key_offsets(mask))
        torch.testing.assert_close(sparse, dense, atol=1e-5, rtol=1e-5)
        assert (weights[..., ~mask] == 0).all()


@pytest.mark.parametrize(
    "mask",
    [
        logsparse_mask(41),
        logsparse_mask(41, "local", window=6),
        logsparse_mask(41, "restart", restart=8),
    ],
    ids=["logsparse", "local", "restart"],
)
def test_the_shifted_keys_rebuild_the_mask_and_train_as_the_dense_path(mask):
    """Each pattern is a few fixed distances back; the sparse path's gradients equal the
    dense masked path's."""
    offsets, valid = key_offsets(mask)
    rebuilt = torch.zeros_like(mask)
    for m, o in enumerate(offsets):
        rows = torch.arange(o, len(mask))
        rebuilt[rows, rows - o] = valid[o:, m]
    assert torch.equal(rebuilt, mask) and not valid[: offsets[-1], -1].any()
    assert len(offsets) < len(mask) / 2
    torch.manual_seed(4)
    attention = ConvSelfAttention(d_model=16, num_heads=4, kernel=3)
    x = torch.randn(2, len(mask), 16, requires_grad=True)
    grads = []
    for keys in (None, (offsets, valid)):
        attention.zero_grad()
        out, _ = attention(x, mask, keys)
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        grads.append((x.grad.clone(), attention.k_conv.weight.grad.clone()))
        x.grad = None
    for dense, sparse in zip(*grads):
        torch.testing.assert_close(sparse, dense, atol=1e-5, rtol=1e-5)


def test_the_shifted_products_and_their_hand_written_gradients_are_exact():
    """The scores q_t · k_{t−o} and the sums Σ w_{m,t} v_{t−o_m} against the dense masked
    products they stand for, and their backward against finite differences (float64).
    Time is the last axis: q, k, v (B, H, Dh, T), w (B, H, M, T)."""
    torch.manual_seed(5)
    offsets = (0, 1, 3, 6)
    q, k, v = (torch.randn(2, 3, 4, 9, dtype=torch.float64, requires_grad=True) for _ in "qkv")
    w = torch.randn(2, 3, len(offsets), 9, dtype=torch.float64, requires_grad=True)
    dense = q.transpose(-2, -1) @ k  # (B, H, T, T)
    steps = torch.arange(9)
    for m, o in enumerate(offsets):
        expected = torch.zeros(2, 3, 9, dtype=torch.float64)
        expected[..., o:] = dense[..., steps[o:], steps[o:] - o]
        torch.testing.assert_close(_ShiftedScores.apply(q, k, offsets)[..., m, :], expected)
    spread = torch.zeros(2, 3, 9, 9, dtype=torch.float64)  # w as a dense (T, T) matrix
    for m, o in enumerate(offsets):
        spread[..., steps[o:], steps[o:] - o] = w[..., m, o:]
    expected = (spread @ v.transpose(-2, -1)).transpose(-2, -1)  # (B, H, Dh, T)
    torch.testing.assert_close(_ShiftedSum.apply(w, v, offsets), expected)
    assert torch.autograd.gradcheck(
        lambda a, b: _ShiftedScores.apply(a, b, offsets), (q, k), rtol=1e-6
    )
    assert torch.autograd.gradcheck(
        lambda a, b: _ShiftedSum.apply(a, b, offsets), (w, v), rtol=1e-6
    )


def test_kernel_one_is_canonical_attention():
    torch.manual_seed(1)
    conv = ConvSelfAttention(d_model=12, num_heads=3, kernel=1).eval()
    canonical = MultiHeadAttention(d_model=12, num_heads=3).eval()
    with torch.no_grad():
        for mine, theirs in ((conv.q_conv, canonical.q_proj), (conv.k_conv, canonical.k_proj)):
            theirs.weight.copy_(mine.weight[:, :, 0])
            theirs.bias.copy_(mine.bias)
        canonical.v_proj.load_state_dict(conv.v_proj.state_dict())
        canonical.out_proj.load_state_dict(conv.out_proj.state_dict())
    x = torch.randn(2, 10, 12)
    mask = logsparse_mask(10, "full")
    mine, _ = conv(x, mask)
    theirs, _ = canonical(x, x, x, mask[None], need_weights=True)
    torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=1e-5)


def test_a_kernel_above_one_compares_shapes_causally():
    """The convolution reads only the steps up to its own: a change at step t changes no
    output before t (for any kernel)."""
    torch.manual_seed(2)
    model = LogSparseForecaster(
        channels=1,
        input_length=30,
        horizon=6,
        d_model=16,
        num_heads=2,
        d_ff=32,
        num_layers=2,
        dropout=0.0,
        kernel=5,
        revin=False,
    ).eval()
    layer = model.layers[0]
    x = torch.randn(1, 36, 16)
    mask = logsparse_mask(36)
    before, _ = layer(x, mask, key_offsets(mask))
    changed = x.clone()
    changed[:, 20] += 3.0
    after, _ = layer(changed, mask, key_offsets(mask))
    torch.testing.assert_close(after[:, :20], before[:, :20])
    assert not torch.allclose(after[:, 20:], before[:, 20:])


def test_the_forecaster_maps_a_window_to_its_horizon_with_ordered_quantiles():
    torch.manual_seed(3)
    model = LogSparseForecaster(
        channels=2,
        input_length=24,
        horizon=8,
        d_model=16,
        num_heads=2,
        d_ff=32,
        num_layers=2,
        dropout=0.1,
        kernel=3,
        time_features=4,
        quantiles=(0.1, 0.5, 0.9),
    ).eval()
    x, xt, yt = torch.randn(3, 24, 2), torch.randn(3, 24, 4), torch.randn(3, 8, 4)
    y, weights = model(x, xt, yt, need_weights=True)
    assert y.shape == (3, 8, 2, 4) and weights.shape == (3, 2, 2, 32, 32)
    assert (y[..., 1] <= y[..., 2]).all() and (y[..., 2] <= y[..., 3]).all()
    # a future value of the window cannot leak: the horizon tokens hold no values
    y2, _ = model(x, xt, yt)
    torch.testing.assert_close(y, y2)
