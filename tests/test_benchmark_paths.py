"""Benchmark results files name paths that mean something on another machine."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SPEED = ROOT / "benchmarks" / "speed"


@pytest.fixture(scope="module")
def speed():
    sys.path.insert(0, str(SPEED))
    try:
        spec = importlib.util.spec_from_file_location("speed_benchmark", SPEED / "run.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SPEED))
    return module


def test_paths_inside_the_repository_are_recorded_relative_to_it(speed):
    assert speed.shown_path(ROOT / "configs" / "multi30k_en_de_2h.yaml") == (
        "configs/multi30k_en_de_2h.yaml")


def test_paths_outside_the_repository_keep_only_their_name(speed, tmp_path):
    assert speed.shown_path(tmp_path / "data" / "multi30k") == "multi30k"


@pytest.mark.parametrize("path", sorted(SPEED.glob("results*.json")), ids=lambda p: p.name)
def test_committed_results_name_no_absolute_path(path):
    settings = json.loads(path.read_text())["settings"]
    absolute = {k: v for k, v in settings.items() if isinstance(v, str) and Path(v).is_absolute()}
    assert not absolute, f"{path.name} records absolute paths: {absolute}"


def test_multi30k_runs_are_named_from_the_repository_or_by_name(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "evaluate_run", ROOT / "benchmarks" / "multi30k" / "evaluate_run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.shown(ROOT / "runs" / "bench" / "en-de") == "runs/bench/en-de"
    assert module.shown(tmp_path / "en-de") == "en-de"
    runs = json.loads((ROOT / "benchmarks" / "multi30k" / "results_runs.json").read_text())
    absolute = [key for key, row in runs.items() if Path(row["run"]).is_absolute()]
    assert not absolute, f"results_runs.json names absolute run folders: {absolute}"
