import math

import pytest
import torch
import torch.nn.functional as F

from transduce.nn import native
from transduce.training import LabelSmoothedCrossEntropy, linear_label_smoothed_ce
from transduce.training.loss import EXP_FLOOR, smoothing_floor


@pytest.fixture(params=["kernel", "pytorch"])
def rows(request, monkeypatch):
    """How the fused loss turns a block of logits into its gradient: the C kernel
    (skipped without a compiler) or PyTorch's operations (the kernel made unavailable)."""
    if request.param == "kernel" and native.library("smoothed_ce") is None:
        pytest.skip("the smoothed_ce kernel needs a C compiler (cc, or $CC)")
    if request.param == "pytorch":
        monkeypatch.setitem(native._loaded, "smoothed_ce", None)
    return request.param


def test_matches_a_hand_computation():
    logits = torch.tensor([[2.0, 0.5, -1.0, 0.0], [0.1, 0.2, 0.3, 0.4]])
    target = torch.tensor([0, 3])
    eps, V = 0.1, 4
    expected = 0.0
    for row, y in zip(logits.tolist(), target.tolist()):
        log_z = math.log(sum(math.exp(v) for v in row))
        log_p = [v - log_z for v in row]
        # q = (1 - ε) on the true class + ε/V everywhere
        expected += -sum(((1 - eps) * (c == y) + eps / V) * log_p[c] for c in range(V))
    loss = LabelSmoothedCrossEntropy(eps, ignore_index=-100)(logits, target)
    assert loss.item() == pytest.approx(expected / 2, rel=1e-6)


def test_equals_torch_cross_entropy_with_label_smoothing_and_ignored_padding():
    logits, target = torch.randn(3, 7, 11), torch.randint(1, 11, (3, 7))
    target[0, 4:] = 0
    target[2, 1:] = 0
    ours = LabelSmoothedCrossEntropy(0.1, ignore_index=0)(logits, target)
    theirs = F.cross_entropy(
        logits.reshape(-1, 11), target.reshape(-1), ignore_index=0, label_smoothing=0.1
    )
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-6)


def test_padding_contributes_nothing():
    loss_fn = LabelSmoothedCrossEntropy(0.1, ignore_index=0, reduction="sum")
    logits, target = torch.randn(1, 3, 5), torch.tensor([[2, 3, 0]])
    changed = logits.clone()
    changed[0, 2] = torch.randn(5) * 10  # any logits at a padding target
    assert loss_fn(logits, target).item() == pytest.approx(loss_fn(changed, target).item())
    assert loss_fn(logits[:, :2], target[:, :2]).item() == pytest.approx(
        loss_fn(logits, target).item()
    )


def test_no_smoothing_is_plain_negative_log_likelihood():
    logits, target = torch.randn(4, 6), torch.randint(0, 6, (4,))
    ours = LabelSmoothedCrossEntropy(0.0, ignore_index=-100)(logits, target)
    torch.testing.assert_close(ours, F.cross_entropy(logits, target))


def test_default_epsilon_is_the_papers():
    assert LabelSmoothedCrossEntropy().epsilon == 0.1


@pytest.mark.parametrize("chunk", [3, 7, 64])
@pytest.mark.parametrize("group", [1, 8, 1024])
@pytest.mark.parametrize("epsilon", [0.0, 0.1])
def test_fused_output_layer_loss_equals_logits_then_loss(chunk, group, epsilon, rows):
    """Chunked output layer + loss: same value and same gradients as the plain graph,
    whether the weight's gradient is summed per chunk or per group of chunks (a full one,
    a partial last one, or all rows at once)."""
    torch.manual_seed(0)
    hidden = torch.randn(20, 8, requires_grad=True)
    weight = torch.randn(11, 8, requires_grad=True)
    target = torch.randint(1, 11, (20,))
    expected = LabelSmoothedCrossEntropy(epsilon, ignore_index=-1, reduction="sum")(
        hidden @ weight.t(), target
    )
    expected.backward(torch.tensor(2.0))
    want = hidden.grad.clone(), weight.grad.clone()
    hidden.grad = weight.grad = None
    got = linear_label_smoothed_ce(hidden, weight, target, epsilon, chunk, group)
    got.backward(torch.tensor(2.0))
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(hidden.grad, want[0])
    torch.testing.assert_close(weight.grad, want[1])


def test_fused_loss_is_exact_when_logits_span_far_beyond_the_exp_floor(rows):
    """The fused loss floors z − max at EXP_FLOOR before exp (a slow path of the CPU exp
    lies below it); with logits hundreds apart, the gold one among the lowest, value and
    gradients still equal the plain graph's."""
    torch.manual_seed(0)
    hidden = torch.randn(12, 8, requires_grad=True)
    weight = (torch.randn(50, 8) * 60).requires_grad_()
    logits = (hidden @ weight.t()).detach()
    assert (logits.amax(-1, keepdim=True) - logits).max() > 4 * -EXP_FLOOR
    target = logits.argmin(-1)  # the gold logit far below the floor: a loss in the hundreds
    expected = LabelSmoothedCrossEntropy(0.1, ignore_index=-1, reduction="sum")(
        hidden @ weight.t(), target
    )
    expected.backward()
    want = hidden.grad.clone(), weight.grad.clone()
    hidden.grad = weight.grad = None
    got = linear_label_smoothed_ce(hidden, weight, target, 0.1, 5)
    got.backward()
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(hidden.grad, want[0])
    torch.testing.assert_close(weight.grad, want[1])


def test_fused_output_layer_loss_runs_in_bf16_under_autocast(rows):
    torch.manual_seed(0)
    hidden = torch.randn(16, 8, requires_grad=True)
    weight = torch.randn(11, 8, requires_grad=True)
    target = torch.randint(0, 11, (16,))
    exact = LabelSmoothedCrossEntropy(0.1, ignore_index=-1, reduction="sum")(
        hidden @ weight.t(), target
    )
    exact.backward()
    want = hidden.grad.clone(), weight.grad.clone()
    hidden.grad = weight.grad = None
    with torch.autocast("cpu", torch.bfloat16):  # 16 rows in chunks of 5, groups of 10
        loss = linear_label_smoothed_ce(hidden, weight, target, 0.1, 5, 10)
    loss.backward()
    assert loss.dtype == torch.float32 and weight.grad.dtype == torch.float32
    torch.testing.assert_close(loss, exact, rtol=2e-2, atol=0)
    # bf16 keeps about 3 significant digits: every chunk's gradient lands in its own rows
    torch.testing.assert_close(hidden.grad, want[0], rtol=0, atol=0.05 * want[0].abs().max())
    torch.testing.assert_close(weight.grad, want[1], rtol=0, atol=0.05 * want[1].abs().max())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_kernel_and_pytorchs_operations_give_the_same_loss_and_gradients(dtype, monkeypatch):
    """The C kernel against PyTorch's path on a block as training sees it: a vocabulary
    that is no multiple of a vector's width, rows split among threads, a gold class at
    either end; the same loss and gradients to float32 rounding (both read the same
    bfloat16 logits)."""
    if native.library("smoothed_ce") is None:
        pytest.skip("the smoothed_ce kernel needs a C compiler (cc, or $CC)")
    torch.manual_seed(0)
    hidden = torch.randn(300, 32).to(dtype).requires_grad_()
    weight = torch.randn(1001, 32).to(dtype).requires_grad_()
    target = torch.randint(0, 1001, (300,))
    target[:2] = torch.tensor([0, 1000])
    results = []
    for kernel in (True, False):
        if not kernel:
            monkeypatch.setitem(native._loaded, "smoothed_ce", None)
        hidden.grad = weight.grad = None
        loss = linear_label_smoothed_ce(hidden, weight, target, 0.1, 128, 256)
        loss.backward()
        results.append((loss, hidden.grad.float(), weight.grad.float()))
    (loss, grad_h, grad_w), (want, want_h, want_w) = results
    torch.testing.assert_close(loss, want, rtol=1e-5, atol=0)
    low = 2**-7 if dtype == torch.bfloat16 else 1e-5  # gradients rounded to bf16 or not
    torch.testing.assert_close(grad_h, want_h, rtol=low, atol=low * want_h.abs().max())
    torch.testing.assert_close(grad_w, want_w, rtol=low, atol=low * want_w.abs().max())


def test_a_gold_id_outside_the_classes_is_refused(rows):
    """Either path refuses an id past the vocabulary (the kernel would read outside a row)."""
    hidden, weight = torch.randn(6, 4), torch.randn(9, 4)
    for bad in (9, -1):
        with pytest.raises((IndexError, RuntimeError)):
            linear_label_smoothed_ce(hidden, weight, torch.tensor([0, 1, 2, bad, 4, 5]), 0.1, 4)


def test_a_nan_among_the_logits_makes_the_fused_loss_nan(rows):
    """A diverged model's NaN reaches the loss (the engine's guard looks there), whichever
    path computes it."""
    hidden, weight = torch.randn(6, 4), torch.randn(9, 4)
    hidden[3, 1] = float("nan")
    assert torch.isnan(linear_label_smoothed_ce(hidden, weight, torch.arange(6), 0.1, 4))


@pytest.mark.parametrize("epsilon, classes", [(0.1, 67), (0.1, 8000), (0.3, 5)])
def test_smoothing_floor_is_the_loss_of_the_smoothed_target_itself(epsilon, classes):
    target = torch.tensor([3, 1])
    q = torch.full((2, classes), epsilon / classes)
    q[torch.arange(2), target] += 1 - epsilon
    best = LabelSmoothedCrossEntropy(epsilon, ignore_index=-1)(q.log(), target)
    # rel: float32 sums
    assert smoothing_floor(epsilon, classes) == pytest.approx(float(best), rel=1e-4)
    worse = q.log() + torch.randn(2, classes) * 0.1  # any other distribution loses more
    assert float(LabelSmoothedCrossEntropy(epsilon, ignore_index=-1)(worse, target)) > float(best)


def test_the_demo_loss_floor_is_about_0_73():
    assert smoothing_floor(0.1, 67) == pytest.approx(0.7345, abs=1e-3)
    assert smoothing_floor(0.0, 67) == 0.0
