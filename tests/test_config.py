import dataclasses
from dataclasses import dataclass

import pytest

from transduce.config import apply_overrides
from transduce.config_files import load_config
from transduce.errors import UserError


@dataclass(frozen=True)
class Example:
    steps: int = 10
    rate: float = 0.5
    name: str = "x"
    flag: bool = False


def test_values_take_the_type_of_the_field():
    cfg = apply_overrides(Example(), ["steps=20", "rate=1e-3", "name=y z", "flag=true"])
    assert cfg == Example(20, 0.001, "y z", True)


def test_later_overrides_win():
    assert apply_overrides(Example(), ["steps=2", "steps=3"]).steps == 3


def test_unknown_key_lists_the_valid_ones():
    with pytest.raises(
        UserError,
        match="unknown config key 'step'; did you mean 'steps'\\? "
        "valid keys: flag, name, rate, steps",
    ):
        apply_overrides(Example(), ["step=3"])


@pytest.mark.parametrize(
    "item, message",
    [
        ("steps=many", "not a valid int"),
        ("flag=maybe", "not a valid bool"),
        ("steps", "not key=value"),
    ],
)
def test_bad_items(item, message):
    with pytest.raises(UserError, match=message):
        apply_overrides(Example(), [item])


def test_list_settings_from_the_command_line_and_yaml(tmp_path):
    from transduce.tasks.forecasting.config import ForecastConfig

    cfg = apply_overrides(ForecastConfig(), ["quantiles=0.1,0.5,0.9"])
    assert cfg.quantiles == (0.1, 0.5, 0.9)
    assert apply_overrides(cfg, ["quantiles=[0.2, 0.8]"]).quantiles == (0.2, 0.8)
    assert apply_overrides(cfg, ["quantiles="]).quantiles == ()
    path = tmp_path / "q.yaml"
    path.write_text("csv: x.csv\nquantiles: [0.1, 0.9]\n")
    assert load_config(ForecastConfig, path).quantiles == (0.1, 0.9)
    with pytest.raises(UserError, match="quantiles='a,b' is not a valid list of numbers"):
        apply_overrides(cfg, ["quantiles=a,b"])
    path.write_text("quantiles: 0.5\n")
    with pytest.raises(UserError, match="quantiles must be a list of numbers"):
        load_config(ForecastConfig, path)
    path.write_text("quantiles: [0.1, yes]\n")
    with pytest.raises(UserError, match="quantiles must be a list of numbers"):
        load_config(ForecastConfig, path)


@pytest.mark.parametrize(
    "items, message",
    [
        (["quantiles=0.9,0.1"], "quantiles must be increasing levels between 0 and 1"),
        (["quantiles=0,0.5"], "quantiles must be increasing levels between 0 and 1"),
        (["quantiles=0.5,0.5"], "quantiles must be increasing levels between 0 and 1"),
        (
            ["model=linear", "quantiles=0.1,0.9"],
            "quantiles is a setting of the transformer, patch, channel and logsparse",
        ),
        (
            ["model=linear", "input_length=24", "trend_kernel=25"],
            "trend_kernel must be at least 0 and at most 24",
        ),
        (["model=linear", "trend_kernel=-1"], "trend_kernel must be at least 0"),
        (
            ["model=patch", "trend_kernel=25"],
            "trend_kernel is a setting of the channel and linear models, not patch",
        ),
        (["model=repeat", "half_life=-1"], "half_life must be 0 .off. or a positive number"),
        (["model=repeat", "half_life=nan"], "half_life must be 0 .off. or a positive number"),
        (["model=repeat", "half_life=inf"], "half_life must be 0 .off. or a positive number"),
        (
            ["model=linear", "half_life=1124"],
            "half_life is a setting of the repeat model, not linear",
        ),
    ],
)
def test_bad_quantiles_are_refused(items, message):
    from transduce.tasks.forecasting.config import ForecastConfig

    with pytest.raises(UserError, match=message):  # by construction, or by the value's check
        apply_overrides(ForecastConfig.of(csv="x.csv"), items).validate("command line")


def test_a_config_file_can_start_from_a_base_file_relative_to_it(tmp_path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "root.yaml").write_text("steps: 5\nrate: 0.25\nname: root\n")
    (tmp_path / "shared" / "middle.yaml").write_text("base: root.yaml\nrate: 0.125\n")
    (tmp_path / "leaf.yaml").write_text("base: shared/middle.yaml\nname: leaf\n")
    cfg = load_config(Example, tmp_path / "leaf.yaml", ["flag=true"])
    assert cfg == Example(steps=5, rate=0.125, name="leaf", flag=True)


def test_a_base_key_from_a_base_file_is_named_in_errors(tmp_path):
    (tmp_path / "root.yaml").write_text("stepz: 5\n")
    (tmp_path / "leaf.yaml").write_text("base: root.yaml\n")
    with pytest.raises(UserError, match="root.yaml.*unknown config key 'stepz'"):
        load_config(Example, tmp_path / "leaf.yaml")


@pytest.mark.parametrize(
    "files, message",
    [
        ({"a.yaml": "base: missing.yaml\n"}, r"a.yaml: base missing.yaml: no such file"),
        (
            {"a.yaml": "base: b.yaml\n", "b.yaml": "base: a.yaml\n"},
            r"b.yaml: base a.yaml leads back to .*a.yaml",
        ),
        ({"a.yaml": "base: a.yaml\n"}, "a file cannot be its own base"),
        (
            {"a.yaml": "base: [1, 2]\n"},
            r"base must be the path of another config file, not \[1, 2\]",
        ),
        ({"a.yaml": "base: ''\n"}, "base must be the path of another config file"),
    ],
)
def test_a_bad_base_is_one_user_error(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(UserError, match=message):
        load_config(Example, tmp_path / "a.yaml")


@pytest.mark.parametrize("pair, langs", [("de_en", ("de", "en")), ("en_fr", ("en", "fr"))])
@pytest.mark.parametrize("recipe", ["", "_30min", "_tiny"])
def test_the_shipped_pair_configs_are_the_en_de_recipes_with_other_languages(pair, langs, recipe):
    from pathlib import Path

    from transduce.tasks.translation.config import TrainConfig

    configs = Path(__file__).parents[1] / "configs"
    other = load_config(TrainConfig, configs / f"multi30k_{pair}{recipe}.yaml")
    en_de = load_config(TrainConfig, configs / f"multi30k_en_de{recipe}.yaml")
    assert (other.src_lang, other.tgt_lang) == langs
    assert other == dataclasses.replace(en_de, src_lang=langs[0], tgt_lang=langs[1])
