"""Training-outcome tests: how they train (precision, seeds), what they record, and the one
table of the bounds they assert.

A test that asserts what training reaches takes the `outcome` fixture (tests/conftest.py)
and checks each measure with ``outcome.check(name, value)``: the value is recorded (JUnit
property, read by benchmarks/outcomes/spread.py) and compared with its bound in ``BOUNDS``.
tests/test_bounds.py then holds every bound to ``MARGIN`` against every spread on record, so
a bound tightened towards what one machine measured fails in review, not on another CPU.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from typing import Callable

import pytest
import torch

from transduce.device import bf16_is_fast

# TRANSDUCE_TEST_PRECISIONS=fp32 (or bf16) runs the outcome tests in one precision only;
# TRANSDUCE_TEST_SEED adds an offset to their seeds (benchmarks/outcomes/spread.py uses it).
PRECISIONS = tuple(
    p.strip()
    for p in os.environ.get("TRANSDUCE_TEST_PRECISIONS", "fp32,bf16").split(",")
    if p.strip()
)
if not PRECISIONS or set(PRECISIONS) - {"fp32", "bf16"}:
    raise pytest.UsageError(
        "TRANSDUCE_TEST_PRECISIONS: give fp32, bf16 or fp32,bf16, not "
        f"{os.environ['TRANSDUCE_TEST_PRECISIONS']!r}"
    )
SEED_OFFSET = int(os.environ.get("TRANSDUCE_TEST_SEED", "0"))
# A CPU without AVX-512 BF16 or AMX emulates bfloat16: a 256³ product took 27.6 ms against
# float32's 2.2 on a 2-core AVX2 EPYC, the bf16 half of the outcome tests took the suite past
# 20 minutes there, and precision=auto never trains in bf16 on such a CPU. There the bf16
# instances skip unless TRANSDUCE_EMULATED_BF16=1 (benchmarks/outcomes/spread.py sets it, so
# a spread still measures both precisions on every machine).
EMULATED_BF16 = not bf16_is_fast(torch.device("cpu"))
RUN_EMULATED_BF16 = os.environ.get("TRANSDUCE_EMULATED_BF16") == "1"


def skip_emulated_bf16(precision: str) -> None:
    """Skip a bf16 training-outcome test where bfloat16 is emulated (see above)."""
    if precision == "bf16" and EMULATED_BF16 and not RUN_EMULATED_BF16:
        pytest.skip(
            "bf16 is emulated on this CPU (no AVX-512 BF16 or AMX; precision=auto trains in "
            "fp32 here): TRANSDUCE_EMULATED_BF16=1 runs it anyway"
        )


@dataclass(frozen=True)
class Bound:
    """What a measure must satisfy: ``low <= value <= high`` (either end may be open), for
    every element of a measure that is a list."""

    low: float | None = None
    high: float | None = None

    def holds(self, value: float) -> bool:
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def __str__(self) -> str:
        return " and ".join(
            s
            for s in (
                self.low is not None and f">= {self.low}",
                self.high is not None and f"<= {self.high}",
            )
            if s
        )


# How far beyond the worst value on record a bound must sit: at least the whole range on
# record (best to worst, over seeds, threads, precisions, kernels and machines), and at
# least 5% of the worst value. An unseen CPU is assumed to move a measure as far again as
# everything measured so far did. Zen 5's bf16 copy loss (0.132) was 3.5 times the range
# Sapphire Rapids had recorded (0.001-0.038), which is why one machine's range is not enough.
MARGIN = "max(range on record, 5% of the worst value)"


def margin(worst: float, best: float) -> float:
    return max(abs(worst - best), 0.05 * abs(worst))


def _of(test: str, **measures: Bound) -> dict[tuple[str, str], Bound]:
    return {(test, measure): bound for measure, bound in measures.items()}


# (test, measure) -> bound. The test is named as spread.py names it: file stem::function,
# with its parameters other than the precision in brackets. Each bound sits MARGIN beyond
# the worst value in benchmarks/outcomes/spread*.json and ../shared/outcomes/*.json.
CHANNEL_COVARIATE = "test_channel::test_a_past_observed_covariate_reaches_the_forecast_through"
BOUNDS: dict[tuple[str, str], Bound] = {
    # the attention figures of the study notes: a trained reversal attends on the
    # anti-diagonal; Nadaraya-Watson's learned width lowers its loss
    **_of(
        "test_attention::test_trained_figures_show_what_their_titles_say",
        nw_loss_ratio=Bound(high=1.0),
        bahdanau_band=Bound(low=0.55),
        bahdanau_rows_on_diagonal=Bound(low=2),
        transformer_rows_near_diagonal=Bound(low=4),
    ),
    # the copy task: exact copies of unseen sequences, and their teacher-forced loss
    **_of(
        "test_copy_task::test_tiny_transformer_learns_to_copy",
        accuracy=Bound(low=0.72),  # 0.86 on a Zen 5 (spread_zen5.md): the rule's margin
        loss=Bound(high=0.3),
    ),
    **_of("test_copy_task::test_bahdanau_baseline_learns_to_copy", accuracy=Bound(low=0.8)),
    # the encoder on its own: a rule over the whole sequence, and one over a token's neighbour
    **_of(
        "test_encoder_only::test_a_tiny_encoder_learns_a_rule[sequence]", accuracy=Bound(low=0.9)
    ),
    **_of("test_encoder_only::test_a_tiny_encoder_learns_a_rule[token]", accuracy=Bound(low=0.9)),
    **_of(
        "test_pooling::test_learned_width_fits_better_than_the_fixed_kernel",
        loss_ratio=Bound(high=0.9),
        w=Bound(low=1.0),
    ),
    # the demo: from ln(67) ~ 4.2 towards label smoothing's floor of 0.73
    **_of(
        "test_demo::test_training_made_progress",
        first_loss=Bound(low=2.0),
        last_loss=Bound(high=1.2),
    ),
    # forecasting: test MSE as a fraction of a baseline's, and what a model reads
    **_of(
        "test_cli::test_patch_model_learns_a_noisy_sine_well_below_repeating",
        ratio=Bound(high=0.3),
    ),
    **_of(
        "test_sparse::test_sparse_learns_a_daily_sine_in_30_epochs_well_below_repeating_it",
        ratio=Bound(high=0.6),
    ),
    **_of(
        "test_sparse::test_a_run_without_revin_s_affine_map_trains_tests_and_resumes",
        mse=Bound(high=1.0),
    ),
    **_of(
        "test_channel::test_a_channel_run_learns_a_sine_and_predicts_and_plots_with_its_band",
        ratio=Bound(high=0.3),
    ),
    **_of(
        f"{CHANNEL_COVARIATE}_channel_attention[learned_mask=false]",
        ratio=Bound(high=0.3),
        y_reads_a=Bound(low=0.8),
    ),
    **_of(
        f"{CHANNEL_COVARIATE}_channel_attention[learned_mask=true]",
        ratio=Bound(high=0.3),
        y_reads_a=Bound(low=0.8),
    ),
    **_of("test_covariates::test_a_known_future_covariate_is_used[patch]", ratio=Bound(high=0.3)),
    **_of(
        "test_covariates::test_a_known_future_covariate_is_used[transformer]",
        ratio=Bound(high=0.3),
    ),
    # a 0.1-0.9 band covers 0.8 of the values if calibrated
    **_of(
        "test_quantiles::test_quantiles_after_training_on_a_noisy_sine_are_ordered_and_calibrated",
        coverage=Bound(low=0.7, high=0.9),
        **{"rho_risk_0.9_0.5": Bound(high=0.5)},  # a measure named with dots
    ),
    # the promotion flag adds 30 to the series
    **_of(
        "test_panel::test_a_global_run_reads_known_future_covariates",
        promo_gap=Bound(low=15.0),
    ),
    # the distance from the mean (mse) or median (mae), which lie 0.3 apart
    **_of(
        "test_point_loss::test_the_point_forecast_learns_the_mean_or_the_median[mae]",
        error=Bound(high=0.05),
    ),
    **_of(
        "test_point_loss::test_the_point_forecast_learns_the_mean_or_the_median[mse]",
        error=Bound(high=0.05),
    ),
}


def key_of(module: str, name: str) -> str:
    """A test's key in BOUNDS and in the spread files, from its module (``tests.nn.test_x``)
    and its pytest name (``test_y[bf16-patch]``): ``test_x::test_y[patch]``."""
    match = re.search(r"\[(.*)\]$", name)
    params = [p for p in (match.group(1).split("-") if match else []) if p not in ("fp32", "bf16")]
    base = re.sub(r"\[.*\]$", "", name)
    return f"{module.split('.')[-1]}::{base}" + (f"[{'-'.join(params)}]" if params else "")


def check(node, record_property: Callable[[str, object], None], name: str, value):
    """Record ``value`` as measure ``name`` of the test ``node`` and assert its bound."""
    key = (key_of(node.module.__name__, node.name), name)
    if key not in BOUNDS:
        raise AssertionError(f"no bound for {key} in tests/helpers/outcomes.py BOUNDS")
    values = [value] if isinstance(value, (int, float)) else [float(v) for v in value]
    record_property(
        name, repr(value if isinstance(value, (int, float)) else [round(v, 6) for v in values])
    )
    bound = BOUNDS[key]
    assert all(bound.holds(v) for v in values), f"{name} = {value}: the bound is {bound}"
    return value


@dataclass(frozen=True)
class Outcome:
    """How a training-outcome test trains (precision, seeds) and checks what it measured."""

    precision: str
    node: object
    record_property: Callable[[str, object], None]

    def seed(self, base: int) -> int:
        return base + SEED_OFFSET

    def args(self, seed: int) -> list[str]:
        """key=value settings for a CLI training run."""
        return [f"precision={self.precision}", f"seed={self.seed(seed)}"]

    def autocast(self) -> contextlib.AbstractContextManager:
        """CPU bfloat16 autocast for "bf16" (none for "fp32"), to wrap a whole training loop.

        Its cast cache is off: with it on, the bfloat16 copy of a weight made at the first
        step is reused for the whole region while the optimiser updates the float32 weight,
        so the layers autocast touches would train on stale copies (the Bahdanau figure's
        attention stayed uniform that way). The engine enters autocast once per step instead.
        """
        return torch.autocast(
            "cpu", torch.bfloat16, enabled=self.precision == "bf16", cache_enabled=False
        )

    def check(self, name: str, value):
        """Record ``value`` and assert its bound in BOUNDS; returns it."""
        return check(self.node, self.record_property, name, value)
