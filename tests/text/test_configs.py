"""The shipped text configs (configs/text_*.yaml) are the text benchmark's recipes: each
equals the settings its results file records for the arm it names, paths and threads
aside, so that a config cannot drift from the figures the docs give for it."""

import dataclasses
import json

import pytest

from tests.helpers.docs import ROOT
from transduce.cli.args import config_and_overrides
from transduce.config import apply_overrides
from transduce.tasks.text.config import TextConfig

# config -> (task, arm of benchmarks/text/results.json (None: the arm chosen on
# validation), its settings or those of the run it was pre-trained as)
SHIPPED = {
    "text_trec.yaml": ("trec", None, "settings"),
    "text_trec_xpos.yaml": ("trec", None, "pretraining"),
    "text_upos.yaml": ("upos", None, "settings"),
    "text_upos_xpos.yaml": ("upos", None, "pretraining"),
    "text_wnut.yaml": ("wnut", None, "settings"),
    "text_wnut_upos.yaml": ("wnut", None, "pretraining"),
}
MACHINE = (*TextConfig.PATH_KEYS, "threads")  # where the files are, the cores


def _recipe(cfg: TextConfig) -> TextConfig:
    """``cfg`` without what depends on the machine it runs on."""
    paths = dict.fromkeys(TextConfig.PATH_KEYS, "")
    return dataclasses.replace(cfg, **paths, engine=dataclasses.replace(cfg.engine, threads=0))


@pytest.mark.parametrize("name", list(SHIPPED))
def test_each_shipped_text_config_is_its_benchmark_arm(name):
    task, arm, part = SHIPPED[name]
    results = json.loads((ROOT / "benchmarks/text/results.json").read_text())[task]
    settings = results["candidates"][arm or results["chosen"]][part]
    bench = apply_overrides(TextConfig(), [s for s in settings if s.split("=")[0] not in MACHINE])
    shipped, source = config_and_overrides(TextConfig, [str(ROOT / "configs" / name)], None)
    shipped.validate(source)
    assert _recipe(shipped) == _recipe(bench)
    assert shipped.train  # it names the files it is for
    row = results["candidates"][arm or results["chosen"]]
    if part == "settings" and row.get("averaged"):  # the arm's model: its last checkpoints
        text = (ROOT / "configs" / name).read_text()
        assert f"#   transduce average runs/{task} --last {row['averaged']}\n" in text


def test_a_shipped_config_starts_from_the_run_its_start_config_names():
    """A fine-tuning config's init is the run folder its pre-training config's comment
    trains into, and every start it names is a shipped config."""
    for name in SHIPPED:
        text = (ROOT / "configs" / name).read_text()
        init = [line.split(": ")[1] for line in text.splitlines() if line.startswith("init:")]
        if init:
            [start] = [n for n in SHIPPED if n != name and n in text]
            assert f"--run-dir {init[0]}" in (ROOT / "configs" / start).read_text()
