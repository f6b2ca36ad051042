"""Every training-outcome bound (tests/helpers/outcomes.py) sits a stated margin beyond the
worst value on record: the spreads of the machine kinds measured here
(benchmarks/outcomes/spread*.json) and every other machine's in ../shared/outcomes/*.json.
A bound tightened towards one machine's figures fails here, in review, before it fails on
a CPU nobody has measured."""

import dataclasses
import json
from pathlib import Path

from tests.helpers.outcomes import BOUNDS, MARGIN, Bound, margin

ROOT = Path(__file__).resolve().parents[1]
SPREADS = sorted((ROOT / "benchmarks" / "outcomes").glob("spread*.json"))
OTHERS = ROOT.parent / "shared" / "outcomes"


def recorded() -> dict[tuple[str, str], list[float]]:
    """(test, measure) -> every extreme on record, from this repository's spreads and the
    other machines' files."""
    found: dict[tuple[str, str], list[float]] = {}
    for spread in SPREADS:
        for row in json.loads(spread.read_text(encoding="utf-8"))["rows"]:
            found.setdefault((row["test"], row["measure"]), []).extend([row["min"], row["max"]])
    for path in sorted(OTHERS.glob("*.json")) if OTHERS.is_dir() else []:
        for row in json.loads(path.read_text(encoding="utf-8"))["rows"]:
            found.setdefault((row["test"], row["measure"]), []).extend(
                v["value"] for v in row["values"]
            )
    return found


def too_tight(bounds: dict, records: dict) -> list[str]:
    """Each bound with no record, or less than its margin beyond its worst recorded value."""
    problems = []
    for key, bound in bounds.items():
        values = records.get(key)
        if not values:
            problems.append(f"{key}: nothing on record (run benchmarks/outcomes/spread.py)")
            continue
        low, high = min(values), max(values)
        if bound.high is not None and bound.high < high + margin(high, low):
            problems.append(
                f"{key}: <= {bound.high}, but the worst on record is {high:.4g} (best "
                f"{low:.4g}): the bound must be at least {high + margin(high, low):.4g}"
            )
        if bound.low is not None and bound.low > low - margin(low, high):
            problems.append(
                f"{key}: >= {bound.low}, but the worst on record is {low:.4g} (best "
                f"{high:.4g}): the bound must be at most {low - margin(low, high):.4g}"
            )
    return problems


def test_every_outcome_bound_sits_its_margin_beyond_every_spread_on_record():
    assert too_tight(BOUNDS, recorded()) == [], f"margin: {MARGIN}"


def test_a_bound_tightened_past_the_worst_value_on_record_is_caught():
    records = recorded()
    key = ("test_copy_task::test_tiny_transformer_learns_to_copy", "loss")
    assert BOUNDS[key] == Bound(high=0.3)
    worst = max(records[key])  # 0.132: Zen 5, bf16, seed offset 0
    for high in (worst * 0.9, worst, worst + margin(worst, min(records[key])) * 0.9):
        tightened = {key: dataclasses.replace(BOUNDS[key], high=high)}
        assert len(too_tight(tightened, records)) == 1, high
    accuracy = ("test_copy_task::test_tiny_transformer_learns_to_copy", "accuracy")
    assert too_tight({accuracy: Bound(low=min(records[accuracy]))}, records)
    assert too_tight({("test_x::test_y", "z"): Bound(high=1.0)}, records)  # nothing on record
