"""Committed benchmark results name paths that mean something on another machine (they are
written through transduce.io.recorded_path)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SPEED = ROOT / "benchmarks" / "speed"


@pytest.mark.parametrize("path", sorted(SPEED.glob("results*.json")), ids=lambda p: p.name)
def test_committed_speed_results_name_no_absolute_path(path):
    settings = json.loads(path.read_text())["settings"]
    absolute = {k: v for k, v in settings.items() if isinstance(v, str) and Path(v).is_absolute()}
    assert not absolute, f"{path.name} records absolute paths: {absolute}"


def test_committed_multi30k_runs_name_no_absolute_path():
    runs = json.loads((ROOT / "benchmarks" / "multi30k" / "results_runs.json").read_text())
    absolute = [key for key, row in runs.items() if Path(row["run"]).is_absolute()]
    assert not absolute, f"results_runs.json names absolute run folders: {absolute}"


def test_committed_serve_results_name_no_absolute_path():
    run = json.loads((ROOT / "benchmarks" / "serve" / "results.json").read_text())["run"]
    assert not Path(run).is_absolute(), f"benchmarks/serve/results.json names {run}"
