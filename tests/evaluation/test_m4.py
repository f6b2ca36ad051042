"""The M4 scores on cases worked out by hand, and Naive2 as the competition's R code makes
it (its seasonality test and classical multiplicative decomposition)."""

import json

import numpy as np
import pytest

from transduce.evaluation import m4


def test_smape_and_mase_by_hand():
    # |y − ŷ| = 10, 0; |y| + |ŷ| = 190, 200 → 200·10/190 / 2 = 5.2632
    assert m4.smape([90, 100], [100, 100]) == pytest.approx(100 * 10 / 190 / 1)
    assert m4.smape([90, 100], [100, 100]) == pytest.approx(5.263158, abs=1e-6)
    history = [1, 2, 3, 5, 4, 6]  # lag 2: |3−1|, |5−2|, |4−3|, |6−5| = 2, 3, 1, 1 → 1.75
    assert m4.mase_scale(history, 2) == pytest.approx(1.75)
    assert m4.mase([7, 8], [6, 6], history, 2) == pytest.approx(1.5 / 1.75)


def test_owa_by_hand():
    truths = {"a": [10.0, 12.0], "b": [5.0, 5.0]}
    histories = {"a": [8.0, 9, 10, 11], "b": [4.0, 6, 5, 8]}  # MASE scales (lag 2): 2, 1.5
    forecasts = {"a": [11.0, 11.0], "b": [5.0, 6.0]}
    got = m4.score(forecasts, truths, histories, season=2)
    smape = ((200 / 21 + 200 / 23) / 2 + (0 + 200 / 11) / 2) / 2
    mase = (1 / 2 + 0.5 / 1.5) / 2
    # Naive2: 4 steps are fewer than 3 seasons, so no seasonality: the last value, 11 and 8
    n2_smape = ((200 / 21 + 200 / 23) / 2 + 200 * 3 / 13) / 2
    n2_mase = (1 / 2 + 3 / 1.5) / 2
    assert got["smape"] == pytest.approx(smape) and got["mase"] == pytest.approx(mase)
    assert got["naive2_smape"] == pytest.approx(n2_smape)
    assert got["naive2_mase"] == pytest.approx(n2_mase)
    assert got["owa"] == pytest.approx(0.5 * (smape / n2_smape + mase / n2_mase))
    assert got["owa"] == pytest.approx(0.331337, abs=1e-6)


def test_owa_of_naive2_itself_is_one():
    rng = np.random.default_rng(0)
    t = np.arange(24 * 10)
    histories = {
        f"s{i}": 100 + 20 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 3, t.size) for i in range(4)
    }
    truths = {k: 100 + 20 * np.sin(2 * np.pi * np.arange(240, 288) / 24) for k in histories}
    base = {k: m4.naive2(h, 48, 24) for k, h in histories.items()}
    assert m4.score(base, truths, histories, 24)["owa"] == pytest.approx(1.0)


def test_naive2_deseasonalises_a_seasonal_series_and_repeats_a_flat_one():
    t = np.arange(24 * 8)
    pattern = 1 + 0.5 * np.sin(2 * np.pi * t / 24)
    series = 50 * pattern
    assert m4.is_seasonal(series, 24)
    forecast = m4.naive2(series, 48, 24)
    # a pure multiplicative pattern: Naive2 continues it (the level is the last value's)
    np.testing.assert_allclose(
        forecast, 50 * (1 + 0.5 * np.sin(2 * np.pi * np.arange(192, 240) / 24)), rtol=1e-6
    )
    noise = np.random.default_rng(1).normal(10, 1, 200)
    assert not m4.is_seasonal(noise, 24)
    np.testing.assert_allclose(m4.naive2(noise, 5, 24), [noise[-1]] * 5)


def test_decomposition_matches_rs_decompose_on_a_small_series():
    # R: decompose(ts(c(1,3,2,4,2,5,3,6), frequency=2), "multiplicative")$figure
    # trend (t = 2..7): (0.5·1+3+0.5·2)/2 = 2.25, 2.75, 3, 3.25, 3.75, 4.25
    x = np.array([1, 3, 2, 4, 2, 5, 3, 6], float)
    trend = np.array([np.nan, 2.25, 2.75, 3.0, 3.25, 3.75, 4.25, np.nan])
    ratio = x / trend
    figure = np.array([np.nanmean(ratio[0::2]), np.nanmean(ratio[1::2])])
    figure /= figure.mean()
    np.testing.assert_allclose(m4.seasonal_indices(x, 2), figure[np.arange(8) % 2])


def test_rho_risk_by_hand():
    # ρ 0.9: y 10 under ŷ 12 → (0.9 − 1)(−2) = 0.2; y 10 over ŷ 8 → 0.9·2 = 1.8
    assert m4.rho_risk([[12.0, 8.0]], [[10.0, 10.0]], 0.9) == pytest.approx(2 * 2.0 / 20)


def test_a_history_the_naive_forecast_fits_exactly_is_left_out_of_mase():
    """M4 has no constant series; here one has no MASE (its scale is 0), and is left out of
    the model's and Naive2's MASE alike; sMAPE keeps every series."""
    histories = {"flat": [5.0] * 10, "ramp": [float(v) for v in range(1, 11)]}
    truths = {"flat": [5.0, 5.0], "ramp": [11.0, 12.0]}
    forecasts = {"flat": [6.0, 6.0], "ramp": [11.0, 13.0]}
    got = m4.score(forecasts, truths, histories, season=1)
    assert got["mase_series"] == 1
    assert got["mase"] == pytest.approx(m4.mase(forecasts["ramp"], truths["ramp"], range(1, 11), 1))
    naive2 = m4.naive2(histories["ramp"], 2, 1)
    assert got["naive2_mase"] == pytest.approx(m4.mase(naive2, truths["ramp"], range(1, 11), 1))
    flat = 200 / 11  # |5 - 6| / (5 + 6), in percent
    assert got["smape"] == pytest.approx((flat + m4.smape(forecasts["ramp"], truths["ramp"])) / 2)
    json.dumps(got, allow_nan=False)


def test_with_no_series_to_scale_mase_and_owa_are_none_not_nan():
    histories = {"a": [5.0] * 10, "b": [2.0] * 10}
    truths = {"a": [5.0, 5.0], "b": [2.0, 2.0]}
    got = m4.score(truths, truths, histories, season=1)  # exact forecasts; Naive2 exact too
    assert got["mase"] is None and got["owa"] is None and got["naive2_mase"] is None
    assert got["smape"] == 0.0 and got["mase_series"] == 0
    json.dumps(got, allow_nan=False)
    assert m4.rho_risk([[1.0, 2.0]], [[0.0, 0.0]], 0.5) is None  # Σ|y| = 0: no scale
    assert m4.mase_scale([3.0], 24) == 0.0  # one value: no naive error to take


def test_a_constant_history_is_not_seasonal_and_naive2_repeats_it():
    assert not m4.is_seasonal([4.0] * 96, 24)  # R's acf gives NaN; here no season
    assert m4.naive2([4.0] * 96, 3, 24).tolist() == [4.0, 4.0, 4.0]
