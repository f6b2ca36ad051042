"""The architecture is a contract the suite checks (pyproject.toml, [tool.importlinter]):
layers import downwards only, nn/ imports no other part of transduce, and no package or
module is part of an import cycle. The contract is also shown to fail when broken."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed "
                                "(make install puts it in .venv)")


def lint(source: Path) -> subprocess.CompletedProcess:
    """lint-imports over the package found in ``source``, with the project's contract."""
    return subprocess.run([str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                          cwd=ROOT, env={"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)


def test_the_import_contract_is_kept():
    result = lint(ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


@pytest.mark.parametrize("module, line, broken", [
    ("runs/state.py", "import transduce.tasks.translation.task", "layers import downwards"),
    ("nn/masks.py", "from transduce.errors import UserError", "nn imports only torch"),
    ("decoding/beam.py", "import transduce.decoding.translator", "no cycles"),
])
def test_the_contract_fails_on_an_upward_import_or_a_cycle(tmp_path, module, line, broken):
    shutil.copytree(ROOT / "src" / "transduce", tmp_path / "transduce",
                    ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "transduce" / module
    target.write_text(line + "\n" + target.read_text(encoding="utf-8"), encoding="utf-8")
    result = lint(tmp_path)
    assert result.returncode != 0
    assert f"{broken}" in result.stdout and "BROKEN" in result.stdout, result.stdout
