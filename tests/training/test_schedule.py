import pytest
import torch

from transduce.training import noam_rate, paper_adam, warmup_schedule


@pytest.mark.parametrize(
    "step, expected",
    [
        (1, 512**-0.5 * 4000**-1.5),  # warm-up: linear in step
        (2000, 512**-0.5 * 2000 * 4000**-1.5),
        (4000, 512**-0.5 * 4000**-0.5),  # the peak, 6.99e-4
        (16000, 512**-0.5 * 16000**-0.5),  # decay: 1/√step
    ],
)
def test_noam_rate_at_known_steps(step, expected):
    assert noam_rate(step, d_model=512, warmup=4000) == pytest.approx(expected, rel=1e-12)


def test_peak_value_of_the_base_model():
    assert noam_rate(4000, 512, 4000) == pytest.approx(6.9877e-4, rel=1e-4)
    assert noam_rate(3999, 512, 4000) < noam_rate(4000, 512, 4000) > noam_rate(4001, 512, 4000)


def test_step_counts_from_one():
    with pytest.raises(ValueError):
        noam_rate(0, 512, 4000)


def test_scheduler_drives_the_optimizer_along_the_formula():
    optimizer = paper_adam([torch.nn.Parameter(torch.zeros(2))])
    group = optimizer.param_groups[0]
    assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9
    schedule = warmup_schedule(optimizer, d_model=64, warmup=10, factor=2.0)
    for step in range(1, 30):
        assert group["lr"] == pytest.approx(noam_rate(step, 64, 10, 2.0))  # used by update k
        optimizer.step()
        schedule.step()


def test_inverse_sqrt_warms_up_linearly_then_decays():
    from transduce.training import inverse_sqrt_rate

    assert inverse_sqrt_rate(1, warmup=100, peak=1e-3) == pytest.approx(1e-5)
    assert inverse_sqrt_rate(100, warmup=100, peak=1e-3) == pytest.approx(1e-3)
    assert inverse_sqrt_rate(400, warmup=100, peak=1e-3) == pytest.approx(5e-4)


def test_unknown_schedule_name():
    from transduce.training import schedule_for

    with pytest.raises(ValueError, match="unknown schedule"):
        schedule_for(paper_adam([torch.nn.Parameter(torch.zeros(1))]), "cosine", 8, 10, 1.0)


def test_weight_decay_shrinks_matrices_by_rate_times_decay_and_spares_vectors():
    matrix = torch.nn.Parameter(torch.full((2, 3), 2.0))
    vector = torch.nn.Parameter(torch.full((3,), 2.0))
    optimizer = paper_adam([matrix, vector], weight_decay=0.1)
    optimizer.param_groups[0]["lr"] = optimizer.param_groups[1]["lr"] = 0.5
    matrix.grad, vector.grad = torch.zeros_like(matrix), torch.zeros_like(vector)
    optimizer.step()  # no gradient: only the decay moves anything
    assert torch.allclose(matrix, torch.full((2, 3), 2.0 * (1 - 0.5 * 0.1)))
    assert torch.equal(vector, torch.full((3,), 2.0))


def test_no_weight_decay_is_the_papers_adam():
    optimizer = paper_adam([torch.nn.Parameter(torch.zeros(2, 2))], weight_decay=0.0)
    assert type(optimizer) is torch.optim.Adam and len(optimizer.param_groups) == 1


def test_the_cooldown_scales_one_step_and_the_schedule_goes_on_from_its_own_rate():
    from transduce.training.schedule import cooldown_factor, scaled_rate

    assert [cooldown_factor(p, 0.3) for p in (0.0, 0.7, 0.85, 1.0)] == pytest.approx(
        [1.0, 1.0, 0.5, 0.0]
    )
    assert cooldown_factor(0.99, 0.0) == 1.0  # no cooldown
    weight = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([{"params": [weight]}, {"params": [], "lr": 0.2}], lr=0.1)
    weight.grad = torch.ones(2)
    with scaled_rate(optimizer, 0.5) as rate:
        assert rate == pytest.approx(0.05)
        optimizer.step()
    torch.testing.assert_close(weight.detach(), torch.full((2,), 1 - 0.05))
    assert [g["lr"] for g in optimizer.param_groups] == [0.1, 0.2]


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_the_papers_adam_is_fused_on_a_cpu_and_updates_as_the_unfused_one(weight_decay):
    """paper_adam takes PyTorch's fused update where it can (a CPU's parameters), and its
    steps are Adam's (or AdamW's) of the same settings to float32 rounding."""
    torch.manual_seed(0)
    weights = [torch.randn(7, 5), torch.randn(5)]
    ours = [torch.nn.Parameter(w.clone()) for w in weights]
    plain = [torch.nn.Parameter(w.clone()) for w in weights]
    optimizer = paper_adam(ours, weight_decay)
    reference = paper_adam(plain, weight_decay)
    for group in reference.param_groups:
        group["fused"] = False  # PyTorch's per-parameter update
    assert all(group["fused"] for group in optimizer.param_groups)
    for group in (*optimizer.param_groups, *reference.param_groups):
        group["lr"] = 1e-2
    steps_agree(optimizer, ours, reference, plain, weights)


def test_the_text_and_forecasting_adamw_is_fused_on_a_cpu_and_updates_as_the_unfused_one():
    """adamw (the text and forecasting tasks') takes PyTorch's fused update on a CPU, with
    AdamW's default betas and eps and the weight decay given, to float32 rounding."""
    from transduce.training.schedule import adamw

    torch.manual_seed(0)
    weights = [torch.randn(6, 4), torch.randn(4)]
    ours = [torch.nn.Parameter(w.clone()) for w in weights]
    plain = [torch.nn.Parameter(w.clone()) for w in weights]
    optimizer = adamw(ours, 1e-2, 0.05)
    reference = torch.optim.AdamW(plain, lr=1e-2, weight_decay=0.05, foreach=False)
    assert all(group["fused"] for group in optimizer.param_groups)
    steps_agree(optimizer, ours, reference, plain, weights)


def steps_agree(optimizer, ours, reference, plain, weights) -> None:
    """Five steps of both optimisers on the same random gradients leave their parameters
    equal to float32 rounding, and moved from where they started."""
    for _ in range(5):
        grads = [torch.randn_like(w) for w in weights]
        for p, q, g in zip(ours, plain, grads):
            p.grad, q.grad = g.clone(), g.clone()
        optimizer.step()
        reference.step()
    for p, q in zip(ours, plain):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)
    assert any(not torch.equal(p, w) for p, w in zip(ours, weights))  # they moved
