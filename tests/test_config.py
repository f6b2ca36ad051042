from dataclasses import dataclass

import pytest

from transduce.config import apply_overrides, load_config
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
    with pytest.raises(UserError, match="unknown config key 'step'; valid keys: flag, name, "
                                        "rate, steps"):
        apply_overrides(Example(), ["step=3"])


@pytest.mark.parametrize("item, message", [
    ("steps=many", "not a valid int"), ("flag=maybe", "not a valid bool"),
    ("steps", "not key=value")])
def test_bad_items(item, message):
    with pytest.raises(UserError, match=message):
        apply_overrides(Example(), [item])


def test_list_settings_from_the_command_line_and_yaml(tmp_path):
    from transduce.forecasting.config import ForecastConfig

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


@pytest.mark.parametrize("items, message", [
    (["quantiles=0.9,0.1"], "quantiles must be increasing levels between 0 and 1"),
    (["quantiles=0,0.5"], "quantiles must be increasing levels between 0 and 1"),
    (["quantiles=0.5,0.5"], "quantiles must be increasing levels between 0 and 1"),
    (["model=linear", "quantiles=0.1,0.9"], "quantiles are for the transformer and patch"),
])
def test_bad_quantiles_are_refused(items, message):
    from transduce.forecasting.config import ForecastConfig

    cfg = apply_overrides(ForecastConfig(csv="x.csv"), items)
    with pytest.raises(UserError, match=message):
        cfg.validate("command line")
