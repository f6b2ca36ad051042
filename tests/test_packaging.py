"""The package declares the torch versions it supports; the exact CPU pin lives in the
Makefile's constraints, so installing transduce elsewhere keeps that environment's torch."""

import re
import tomllib
from pathlib import Path

import torch

ROOT = Path(__file__).parents[1]


def version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


def test_torch_is_a_range_that_holds_the_pinned_build():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [d for d in project["dependencies"] if re.match(r"torch\b", d)]
    assert len(declared) == 1 and "==" not in declared[0]
    low = re.search(r">=\s*([\d.]+)", declared[0]).group(1)
    high = re.search(r"<\s*([\d.]+)", declared[0]).group(1)
    pinned = re.search(r"^torch==([\d.]+)$", (ROOT / "constraints.txt").read_text(), re.M)
    assert pinned, "constraints.txt pins the CPU build the two README commands install"
    assert version(low) <= version(pinned.group(1)) < version(high)
    assert version(low) <= version(torch.__version__) < version(high)
    makefile = (ROOT / "Makefile").read_text()
    assert f"torch=={pinned.group(1)}" in makefile and "-c constraints.txt" in makefile
