"""The CPU dropout's mask: its rate, its scale, its independence across the four 16-bit
numbers cut from each 64-bit word, and its repeatability under a seed; each test for both
sources of the words, the C kernel's stream and PyTorch's generator."""

import math

import pytest
import torch
import torch.nn.functional as F

from transduce.nn import native
from transduce.nn.dropout import Dropout, dropout, dropout_add, keep_mask


@pytest.fixture(params=["kernel", "pytorch"], autouse=True)
def words(request, monkeypatch):
    """Where the random words come from: the C kernel (skipped without a compiler) or
    PyTorch's generator (the kernel made unavailable)."""
    if request.param == "kernel" and native.library("dropout") is None:
        pytest.skip("the dropout kernel needs a C compiler (cc, or $CC)")
    if request.param == "pytorch":
        monkeypatch.setitem(native._loaded, "dropout", None)
    return request.param


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_drop_rate_matches_p(p):
    torch.manual_seed(0)
    n = 1 << 20
    keep, q = keep_mask((n,), p)
    assert abs(q - p) <= 2**-17  # p rounded to a multiple of 2⁻¹⁶
    sigma = math.sqrt(p * (1 - p) / n)
    assert abs((1 - keep.float().mean().item()) - p) < 5 * sigma


def test_every_lane_of_a_draw_is_uniform():
    # each 64-bit draw gives four 16-bit numbers; a generator that left a bit fixed (e.g.
    # the sign of the top one, as random_() on int64 does) would skew one lane
    torch.manual_seed(1)
    n = 1 << 20
    keep, _ = keep_mask((n,), 0.5)
    lanes = keep.view(-1, 4).float().mean(0)  # keep rate of each lane
    sigma = math.sqrt(0.25 / (n // 4))
    assert torch.all((lanes - 0.5).abs() < 5 * sigma), lanes
    words = keep.view(-1, 4)
    for a in range(4):  # and the lanes of a word independent: agreeing half the time
        for b in range(a + 1, 4):
            agree = (words[:, a] == words[:, b]).float().mean()
            assert abs(agree - 0.5) < 5 * sigma, (a, b, agree)


def test_odd_sizes_and_shapes():
    keep, _ = keep_mask((3, 5, 7), 0.2)  # 105 elements: not a multiple of four
    assert keep.shape == (3, 5, 7) and keep.dtype == torch.bool


def test_expectation_kept_and_gradient_is_the_mask():
    torch.manual_seed(2)
    x = torch.ones(1 << 20, requires_grad=True)
    y = dropout(x, 0.3)
    kept = y != 0
    assert torch.allclose(y[kept], torch.full_like(y[kept], 1 / (1 - 0.3)), rtol=1e-4)
    assert abs(y.mean().item() - 1) < 5 * math.sqrt(0.3 / 0.7 / x.numel())
    y.sum().backward()
    assert torch.equal(x.grad, y.detach())  # d(sum y)/dx = mask · scale = y for x = 1


def test_repeatable_under_a_seed_and_different_across_seeds():
    x = torch.randn(64, 33)
    torch.manual_seed(5)
    a = dropout(x, 0.4)
    torch.manual_seed(5)
    b = dropout(x, 0.4)
    torch.manual_seed(6)
    c = dropout(x, 0.4)
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_identity_when_not_training_or_p_zero_and_dtype_kept():
    x = torch.randn(8, 16, dtype=torch.bfloat16)
    assert dropout(x, 0.5, training=False) is x
    assert dropout(x, 0.0) is x
    assert dropout(x, 0.5).dtype == torch.bfloat16
    assert torch.equal(dropout(x, 1.0), torch.zeros_like(x))  # PyTorch's own p = 1


def test_module_follows_train_and_eval_and_rejects_bad_p():
    layer = Dropout(0.5)
    x = torch.randn(32, 32)
    assert not torch.equal(layer(x), x)
    layer.eval()
    assert layer(x) is x
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(1.5)
    with pytest.raises(ValueError):
        dropout(x, -0.1)  # F.dropout's own error


def test_matches_f_dropout_in_distribution():
    # same rate and scale as PyTorch's dropout: their sums over many elements agree
    torch.manual_seed(3)
    x = torch.rand(1 << 18) + 1
    ours, theirs = dropout(x, 0.1), F.dropout(x, 0.1)
    rate_ours, rate_theirs = (ours == 0).float().mean().item(), (theirs == 0).float().mean().item()
    assert rate_ours == pytest.approx(rate_theirs, abs=0.005)
    assert ours.sum().item() == pytest.approx(theirs.sum().item(), rel=0.01)


def test_dropout_applies_the_mask_keep_mask_draws_and_bf16_keeps_it():
    """Under one seed, dropout's kept elements are keep_mask's, in float32 and bfloat16,
    and the gradient is the mask times the scale, in the input's type."""
    x = torch.rand(3, 1001) + 0.5
    torch.manual_seed(8)
    keep, q = keep_mask(x.shape, 0.25)
    for dtype in (torch.float32, torch.bfloat16):
        leaf = x.to(dtype).requires_grad_()
        torch.manual_seed(8)
        y = dropout(leaf, 0.25)
        assert y.dtype == dtype and torch.equal(y != 0, keep)
        expected = leaf.detach().float() * keep / (1 - q)
        torch.testing.assert_close(y.float(), expected, rtol=1e-2, atol=0)
        (grad,) = torch.autograd.grad(y, leaf, torch.ones_like(y))
        assert grad.dtype == dtype
        torch.testing.assert_close(grad.float(), keep / (1 - q), rtol=1e-2, atol=0)


def test_a_view_that_is_not_contiguous_is_dropped_out_too():
    x = torch.ones(40, 30).t()  # a transposed view
    torch.manual_seed(4)
    y = dropout(x, 0.5)
    assert y.shape == (30, 40) and 0.3 < (y == 0).float().mean() < 0.7
    assert torch.equal(y[y != 0], torch.full_like(y[y != 0], 2.0))


def test_the_mask_is_the_same_on_any_number_of_threads():
    x = torch.randn(257, 129)
    before, masks = torch.get_num_threads(), []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            torch.manual_seed(11)
            masks.append(dropout(x, 0.3) != 0)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(*masks)


F32, BF16 = torch.float32, torch.bfloat16


@pytest.mark.parametrize("types", [(F32, F32), (F32, BF16), (BF16, F32), (BF16, BF16)])
def test_dropout_add_is_the_sum_with_the_mask_dropout_draws(types, words):
    """x + dropout(y): the mask :func:`dropout` draws under the same seed, and the gradients
    the sum's (for x) and the kept part of it, scaled (for y), each in its input's type. The
    kernel sums in float32 and rounds once to the promoted type; the fallback is the sum
    as written (bfloat16's dropout rounded before the sum)."""
    torch.manual_seed(3)
    x = torch.randn(5, 1031).to(types[0]).requires_grad_()
    y = torch.randn(5, 1031).to(types[1]).requires_grad_()
    torch.manual_seed(9)
    keep, q = keep_mask(x.shape, 0.3)
    torch.manual_seed(9)
    out = dropout_add(x, y, 0.3)
    assert out.dtype == torch.promote_types(*types)
    scale = 1 / (1 - q)  # a float32 factor, as both paths apply it
    exact = dict(rtol=0, atol=0) if words == "kernel" else dict(rtol=1e-2, atol=1e-2)
    expected = x.detach().float() + torch.where(keep, y.detach().float() * scale, 0.0)
    torch.testing.assert_close(out, expected.to(out.dtype), **exact)
    g = torch.randn(out.shape).to(out.dtype)
    dx, dy = torch.autograd.grad(out, (x, y), g)
    assert (dx.dtype, dy.dtype) == types
    torch.testing.assert_close(dx, g.to(types[0]), rtol=0, atol=0)
    want = torch.where(keep, g.float() * scale, 0.0).to(types[1])
    torch.testing.assert_close(dy, want, **exact)


def test_dropout_add_outside_training_or_of_other_shapes_is_the_plain_sum():
    x, y = torch.randn(4, 6), torch.randn(4, 6)
    assert torch.equal(dropout_add(x, y, 0.5, training=False), x + y)
    assert torch.equal(Dropout(0.5).eval().add(x, y), x + y)
    torch.manual_seed(5)
    row = dropout_add(x, y[:1], 0.5)  # broadcast: x + dropout(y) as written
    torch.manual_seed(5)
    assert torch.equal(row, x + dropout(y[:1], 0.5))
