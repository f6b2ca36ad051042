"""Where bfloat16 is emulated, the bf16 training-outcome tests skip (tests/helpers/outcomes.py),
unless asked to run; fp32 never skips, and a CPU with native bf16 runs both."""

import pytest

from tests.helpers import outcomes


@pytest.mark.parametrize(
    ("emulated", "forced", "precision", "skips"),
    [
        (True, False, "bf16", True),
        (True, True, "bf16", False),
        (True, False, "fp32", False),
        (False, False, "bf16", False),
    ],
)
def test_bf16_outcomes_skip_only_where_bf16_is_emulated(
    monkeypatch, emulated, forced, precision, skips
):
    monkeypatch.setattr(outcomes, "EMULATED_BF16", emulated)
    monkeypatch.setattr(outcomes, "RUN_EMULATED_BF16", forced)
    if skips:
        with pytest.raises(pytest.skip.Exception, match="TRANSDUCE_EMULATED_BF16=1"):
            outcomes.skip_emulated_bf16(precision)
    else:  # a skip raised here would only skip this test, so it is caught and failed
        try:
            outcomes.skip_emulated_bf16(precision)
        except pytest.skip.Exception:
            pytest.fail(f"skipped {precision} with emulated={emulated}, forced={forced}")
