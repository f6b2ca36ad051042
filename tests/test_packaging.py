"""The package declares the torch versions it supports; the exact CPU pin lives in the
Makefile's constraints, so installing transduce elsewhere keeps that environment's torch."""

import importlib.metadata
import re
import tomllib
from pathlib import Path

import torch

ROOT = Path(__file__).parents[1]


def version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


def missing(requirements: list[str]) -> list[str]:
    """The requirements whose distribution is not installed here."""
    names = [re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0] for r in requirements]
    absent = []
    for name, requirement in zip(names, requirements):
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            absent.append(requirement)
    return absent


def test_every_package_the_test_extra_declares_is_installed():
    """The suite imports them outright (no importorskip), so a broken install fails here,
    saying which package is missing, rather than as an import error further on."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = project["optional-dependencies"]["test"]
    assert missing(declared) == [], "pip install -c constraints.txt -e '.[test]' (make install)"
    assert missing(["surely-not-a-package-of-this-venv>=1"]) == [
        "surely-not-a-package-of-this-venv>=1"
    ]


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


def test_the_version_is_one_and_the_command_line_says_it():
    import subprocess
    import sys
    from importlib.metadata import version as installed

    from transduce.version import __version__

    assert installed("transduce") == __version__
    shown = subprocess.run(
        [sys.executable, "-m", "transduce", "--version"], capture_output=True, text=True, timeout=60
    ).stdout
    assert shown.strip() == f"transduce {__version__}"
    assert f"## {__version__.removesuffix('.dev0')}" in (ROOT / "CHANGELOG.md").read_text()
    assert re.search(
        rf"^version: {re.escape(__version__)}$", (ROOT / "CITATION.cff").read_text(), re.M
    )


def test_a_built_wheel_installs_alone_and_runs_the_demo(tmp_path):
    """python -m build makes a wheel; installed into a new virtual environment (with no
    source tree on its path), its `transduce demo` runs. The environment borrows this one's
    installed dependencies (torch and the rest, read-only) so nothing is downloaded."""
    import os
    import shutil
    import subprocess
    import sys
    import sysconfig
    import zipfile

    copy = tmp_path / "source"  # what the wheel is built from, without the checkout's builds
    shutil.copytree(
        ROOT / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, copy / name)
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(dist),
            str(copy),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    wheel = next(dist.glob("transduce-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()  # the kernels are compiled at first use
    sources = ("dropout.c", "shifted_attention.c", "bf16.h")
    assert {f"transduce/nn/csrc/{name}" for name in sources} <= set(names)
    env_dir = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120
    )
    lib = next((env_dir / "lib").glob("python3*")) / "site-packages"
    # the dependencies, without this checkout's editable transduce (a .pth in that folder,
    # which a path line does not run)
    (lib / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    python = env_dir / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    env = {**os.environ, "PYTHONPATH": ""}
    where = subprocess.run(
        [str(python), "-c", "import transduce; print(transduce.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    ).stdout
    assert str(lib) in where and str(ROOT) not in where  # the wheel's copy, not the checkout
    demo = subprocess.run(
        [
            str(env_dir / "bin" / "transduce"),
            "demo",
            "max_steps=50",
            "threads=1",
            "--output",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert "exact match" in demo.stdout
    assert (tmp_path / "run" / "cross_attention.png").stat().st_size > 10_000
