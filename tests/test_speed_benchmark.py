"""The speed benchmark goes on past a system that cannot run the model (a pre-norm run,
which Marian cannot take): the failure is recorded with its reason, the tables, the page
and the figure are made of the rest, and the skip is said."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def speed_harness():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from gen_pages import harness
    finally:
        sys.path.remove(str(ROOT / "docs"))
    return harness("speed/run.py"), harness("speed/plot.py")


def test_a_system_that_cannot_run_is_recorded_and_the_rest_are_summarised(tmp_path):
    run, plot = speed_harness()
    why = "transduce.errors.UserError: Marian is post-norm only; this model is pre-norm"
    error = f"Traceback ...\n{why}\n"
    skip = run.skipped("translate:marian-generate:6000", error)
    assert skip == {
        "system": "marian-generate",
        "max_tokens": 6000,
        "skipped": why,
    }
    results = json.loads((ROOT / "benchmarks/speed/results_tiny.json").read_text())
    results["translation"] = [
        skip if r["system"] == "marian-generate" else r for r in results["translation"]
    ]
    results["training"] = [
        run.skipped("train:marian:4096", "RuntimeError: no") if r["system"] == "marian" else r
        for r in results["training"]
    ]
    table = run.summarise(results)
    assert "| marian-generate |" not in table and "| transduce-fp32 |" in table
    assert "| marian (" not in table and "| transduce (" in table
    assert f"- not measured: marian-generate (translation, 6000-token batches): {why}" in table
    assert "- not measured: marian (training, 4096-token batches): RuntimeError: no" in table
    plot.plot(results, tmp_path / "speed.png")
    assert (tmp_path / "speed.png").stat().st_size > 10_000


def test_a_system_measured_in_turns_gives_its_median_round_and_keeps_every_round():
    run, _ = speed_harness()
    rounds = [
        {"system": "marian", "tokens_per_s": rate, "model_flops_per_s": rate * 10, "steps": 12}
        for rate in (5_100, 3_500, 4_800)
    ]
    merged = run.in_turns(rounds)
    assert merged["tokens_per_s"] == 4_800 and merged["model_flops_per_s"] == 48_000
    assert merged["rounds_tokens_per_s"] == [5_100, 3_500, 4_800] and merged["steps"] == 36
    skip = run.skipped("train:marian:4096", "RuntimeError: no")
    assert run.in_turns([rounds[0], skip]) == skip


def test_one_half_measured_alone_is_summarised_alone():
    """`--only train` into a file of its own (the compiled system's run) gets the training
    table, and a translation-only file its tables, each without the other's."""
    run, _ = speed_harness()
    results = json.loads((ROOT / "benchmarks/speed/results_tiny.json").read_text())
    training = run.summarise({**results, "translation": []})
    assert "| transduce (" in training and "| transduce-fp32 |" not in training
    translation = run.summarise({**results, "training": []})
    assert "| transduce-fp32 |" in translation and "| transduce (" not in translation
    whole = run.summarise(results)  # both halves: the two, in that order
    assert whole.index(training.strip()) < whole.index(translation.strip())


def test_paired_training_ratios_are_medians_over_batches_not_ratios_of_medians():
    """paired_train.py: each system's ratio is the median over batches of its step's time
    against transduce's on the same batch, so a slow spell that falls on one batch moves
    both; the table names the quartiles and divides MFU by the higher measured peak."""
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from gen_pages import harness
    finally:
        sys.path.remove(str(ROOT / "docs"))
    paired = harness("speed/paired_train.py")
    seconds = {"transduce": [1.0, 3.0, 1.0], "marian": [2.5, 4.0, 2.0]}  # a slow 2nd batch
    counts, flops = [1000, 3000, 1000], [1e12, 3e12, 1e12]
    losses = {"transduce": [10.0, 4], "marian": [10.4, 4]}
    ours, marian = paired.paired_rows(seconds, counts, flops, losses)
    assert ours["ratio"] == 1.0 and marian["ratio"] == 2.0  # per batch: 2.5, 1.33, 2.0
    # the ratio of the median speeds would say 1000 / 750 = 1.33×
    assert ours["tokens_per_s"] == 1000 and marian["tokens_per_s"] == 500
    assert marian["loss_per_token"] == 2.6 and marian["steps"] == 3
    for row in (ours, marian):
        row["precision"] = "bf16"
    settings = {"systems": "transduce,marian", "rounds": 1, "steps": 3, "threads": 2}
    table = paired.summarise(
        {
            "settings": settings,
            "machine": "a CPU",
            "rows": [ours, marian],
            "peak_flops_per_s": 2e12,
            "peaks": [1e12, 2e12],
        }
    )
    low, _, high = paired.quartiles([2.5, 4 / 3, 2.0])
    assert f"| marian (bf16) | 500 | 2.00× | {low:.2f}–{high:.2f} | 25% | 2.6 |" in table
    assert "2.00 TFLOP/s (the higher of 1.00, 2.00, before and after)" in table
