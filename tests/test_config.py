from dataclasses import dataclass

import pytest

from transduce.config import apply_overrides
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
