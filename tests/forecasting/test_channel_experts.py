"""The `channel` model's experts: started at the window's mean, and the top-k router that
sends each window to k of them, with its balance loss in the task's and an ensemble's loss."""

import dataclasses

import pytest
import torch

from transduce.config import apply_overrides


@pytest.mark.parametrize("trend_kernel", [0, 5])
def test_experts_started_at_the_mean_embed_a_window_as_its_mean(trend_kernel):
    from transduce.tasks.forecasting.config import ForecastConfig, build_forecaster

    cfg = ForecastConfig.of(
        csv="x.csv",
        model="channel",
        input_length=24,
        horizon=6,
        trend_kernel=trend_kernel,
        expert_init="mean",
        experts=3,
        d_model=8,
    )
    model = build_forecaster(cfg, 2)
    x = torch.randn(4, 24, 2)
    tokens = model.tokens(x)  # (B, C, D): every feature of every expert the window's mean
    assert torch.allclose(tokens, x.mean(1).unsqueeze(-1).expand(4, 2, 8), atol=1e-5)
    random = build_forecaster(
        dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, expert_init="uniform")), 2
    )
    assert not torch.allclose(random.tokens(x), tokens, atol=1e-3)


def test_the_top_k_router_sends_each_window_to_k_experts():
    from transduce.nn.forecasting.channel import TopKRouter

    torch.manual_seed(0)
    router = TopKRouter(input_length=12, experts=4, k=2, hidden=16)
    series = torch.randn(5, 3, 12)
    router.eval()
    weights = router(series)
    assert weights.shape == (5, 3, 4) and router.balance_loss is None
    assert ((weights > 0).sum(-1) == 2).all()
    assert torch.allclose(weights.sum(-1), torch.ones(5, 3))
    router.train()
    router(series)
    loss = router.balance_loss
    assert loss.dim() == 0 and loss > 0
    loss.backward()  # the loads carry the gradient to both maps, the noise's too
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in router.parameters())


def test_the_balance_loss_is_the_squared_coefficient_of_variation():
    from transduce.nn.forecasting.channel import cv_squared

    assert cv_squared(torch.tensor([1.0, 1.0, 1.0])) == 0
    assert cv_squared(torch.tensor([2.0, 0.0])) == pytest.approx(2.0)  # var 2 (n − 1), mean 1
    assert cv_squared(torch.tensor([3.0])) == 0


def test_the_task_adds_the_routers_balance_loss(tmp_path):
    from tests.helpers.forecasting import skewed_task
    from transduce.tasks.forecasting.config import build_forecaster

    task = skewed_task(tmp_path, "mae")
    task.cfg = apply_overrides(task.cfg, ["model=channel", "experts=3", "top_k=1", "quantiles="])
    model = build_forecaster(task.cfg, 1).train()
    batch = task.batches(0)[0]
    torch.manual_seed(1)
    loss, units = task.loss(model, batch)
    balance = model.gate.balance_loss
    assert balance > 0
    x, y, x_time, y_time = (torch.stack(t) for t in zip(*(task.windows[int(i)] for i in batch)))
    torch.manual_seed(1)  # the same noise and dropout: the same forecast
    forecast, _ = model(x, x_time, y_time)
    error = (forecast[..., 0].float() - y).abs().sum()
    assert loss.item() == pytest.approx((error + balance * units).item(), rel=1e-5)


def test_a_router_that_takes_every_expert_has_no_noise_to_learn():
    from transduce.nn.forecasting.channel import TopKRouter

    router = TopKRouter(input_length=12, experts=3, k=3, hidden=8).train()
    weights = router(torch.randn(2, 2, 12))
    assert (weights > 0).all() and router.noise is None
    router.balance_loss.backward()  # every parameter it has is used (DDP needs that)
    assert all(p.grad is not None for p in router.parameters())


def test_an_ensembles_auxiliary_loss_is_its_members_and_none_without_a_router(tmp_path):
    from tests.helpers.forecasting import skewed_task
    from transduce.tasks.forecasting.config import build_forecaster

    task = skewed_task(tmp_path, "mae")
    routed = ["model=channel", "experts=3", "top_k=1", "quantiles=", "members=2"]
    model = build_forecaster(apply_overrides(task.cfg, routed), 1).train()
    x, _, x_time, y_time = (torch.stack(t) for t in zip(*(task.windows[i] for i in range(8))))
    model(x, x_time, y_time)
    members = [m.gate.balance_loss for m in model.members]
    assert all(b > 0 for b in members)
    torch.testing.assert_close(model.auxiliary_loss(), members[0] + members[1])
    model.eval()
    model(x, x_time, y_time)
    assert model.auxiliary_loss() is None  # no balance to keep when forecasting
    gated = build_forecaster(apply_overrides(task.cfg, ["model=channel", "quantiles="]), 1)
    gated(x, x_time, y_time)
    assert gated.auxiliary_loss() is None  # a softmax gate, no router
