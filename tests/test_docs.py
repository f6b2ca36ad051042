"""The documentation site builds with `mkdocs build --strict` (a broken link, a missing
page or an API object that does not exist fails it), and its generated reference holds
every command, option and setting."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from transduce.cli.main import commands
from transduce.cli.settings_help import setting_meanings
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.translation.config import TrainConfig

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site as `make docs` builds it: the same Makefile target, with this interpreter's
    tools."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "site",
            f"SITE={out}",
            f"BIN={Path(sys.executable).parent}",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return out


def page(site: Path, name: str) -> str:
    return (site / name / "index.html").read_text(encoding="utf-8")


def test_the_site_builds_strictly_with_every_page(site):
    for name in (
        "learn",
        "guides/translation",
        "guides/forecasting",
        "guides/serving",
        "reference/cli",
        "reference/configuration",
        "reference/api",
        "results/translation",
        "results/forecasting",
        "results/speed",
        "results/serving",
        "results/demo",
        "changelog",
    ):
        assert (site / name / "index.html").is_file(), name


def test_the_cli_reference_has_every_command_and_option(site):
    text = page(site, "reference/cli")
    for name in commands():
        assert f'id="{name}"' in text, name
    for option in ("--run-dir", "--nbest", "--read-timeout", "--window-ms", "--folds"):
        assert option in text, option
    for inner in ("train", "test", "backtest", "calibrate", "blend", "predict", "plot"):
        assert f"forecast {inner}" in text, inner


def test_the_configuration_reference_has_every_setting(site):
    text = page(site, "reference/configuration")
    for config in (TrainConfig(), ForecastConfig()):
        for key, meaning in setting_meanings(config).items():  # as --help: unused ones left out
            if not (meaning or "").startswith("unused"):
                assert f"<code>{key}</code>" in text, key
    assert "<code>model.trend_kernel</code>" in text  # a setting of another model than the default


def test_the_api_reference_is_made_from_the_docstrings(site):
    text = page(site, "reference/api")
    assert "transduce.api.loading.load" in text and "Forecaster" in text
    assert "softmax(QKᵀ/√d_k)V" in text  # scaled_dot_product_attention's own docstring
    # the docstrings' Sphinx roles became links (docs/griffe_roles.py), none left raw or
    # pointing at an object the page does not document
    assert ":class:" not in text and ":func:" not in text
    assert "][transduce." not in text


def test_results_pages_are_the_results_files(site):
    import json

    text = page(site, "results/translation")
    runs = json.loads((ROOT / "benchmarks/multi30k/results_runs.json").read_text())
    entry = runs["30min-recipe-side-by-side-pair-ensemble-of-2-seeds-1thread-each-zen5"]
    assert f"{entry['test_2016_flickr']['bleu_tok']:.2f}" in text


def test_a_results_file_with_an_absolute_path_stops_the_build():
    spec = importlib.util.spec_from_file_location("gen_pages", ROOT / "docs" / "gen_pages.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert gen._absolute_paths({"rows": [{"run": "/home/me/runs/x"}, {"run": "runs/y"}]}) == {
        "/home/me/runs/x"
    }
    assert gen._absolute_paths({"settings": {"data": "data/multi30k"}}) == set()
