import math

import torch

from transduce.nn import LearnedNadarayaWatson, NadarayaWatson, gaussian_pooling


def test_nadaraya_watson_matches_the_kernel_formula():
    x = torch.tensor([0.5, 2.0])
    keys, values = torch.tensor([0.0, 1.0, 3.0]), torch.tensor([1.0, -2.0, 4.0])
    pooled, weights = NadarayaWatson(width=1.0)(x, keys, values)
    for i, query in enumerate(x.tolist()):
        kernel = [math.exp(-((query - k) ** 2) / 2) for k in keys.tolist()]
        expected = sum(w * y for w, y in zip(kernel, values.tolist())) / sum(kernel)
        assert math.isclose(pooled[i].item(), expected, rel_tol=1e-5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2))


def test_vector_values_and_mask():
    pooled, weights = gaussian_pooling(
        torch.zeros(1, 1),
        torch.tensor([[0.0, 9.0]]),
        torch.tensor([[[1.0, 2.0], [3.0, 4.0]]]),
        1.0,
        mask=torch.tensor([[[False, True]]]),
    )
    torch.testing.assert_close(pooled, torch.tensor([[[3.0, 4.0]]]))
    assert weights[0, 0, 0] == 0


def test_learned_width_fits_better_than_the_fixed_kernel(outcome):
    """d2l §11.2: y = 2 sin x + x^0.8 + noise, each training point attends to the others."""
    torch.manual_seed(outcome.seed(0))
    n = 50
    x = torch.sort(torch.rand(n) * 5).values
    y = 2 * torch.sin(x) + x**0.8 + torch.normal(0.0, 0.5, (n,))
    not_self = ~torch.eye(n, dtype=torch.bool)  # a point may not look up its own value
    model = LearnedNadarayaWatson()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    loss = lambda: ((model(x, x, y, mask=not_self)[0] - y) ** 2).mean()  # noqa: E731
    with outcome.autocast():
        start = loss().item()
        for _ in range(20):
            optimizer.zero_grad()
            value = loss()
            value.backward()
            optimizer.step()
        # measured 0.45-0.55 of the start, and w 2.4-2.6 (benchmarks/outcomes/spread.md)
        outcome.check("loss_ratio", loss().item() / start)
    outcome.check("w", model.w.item())  # a narrower kernel fits this curve


def test_gradcheck_gaussian_pooling():
    q = torch.randn(3, dtype=torch.double, requires_grad=True)
    k = torch.randn(4, dtype=torch.double, requires_grad=True)
    v = torch.randn(4, dtype=torch.double, requires_grad=True)
    w = torch.tensor(1.3, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda q, k, v, w: gaussian_pooling(q, k, v, w)[0], (q, k, v, w)
    )
