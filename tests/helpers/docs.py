"""The README and the hand-written documentation pages as tests read them: their text, their
code blocks, a console block by a marker, and a console line run at a reduced size."""

import re
import shlex
from pathlib import Path

from transduce.cli.main import main

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# the pages written by hand (the generated ones are made by docs/gen_pages.py at build time)
PAGES = {
    path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "docs").rglob("*.md"))
}
TEXTS = {"README.md": README, **PAGES}
BLOCKS = [
    block
    for text in TEXTS.values()
    for block in re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S)
]


def console_block(marker: str) -> list[str]:
    """The commands of the console block that contains ``marker`` (the README's tour and a
    guide may show the same block)."""
    found = {body for kind, body in BLOCKS if kind == "console" and marker in body}
    assert len(found) == 1, marker
    return [line[2:] for line in found.pop().splitlines() if line.startswith("$ transduce")]


def run_console(command: str, capsys, replace=(), extra=()) -> str:
    """Run a README command line (``> FILE`` redirects standard output); return stdout."""
    for old, new in replace:
        command = command.replace(old, new)
    argv = shlex.split(command)[1:]
    target = None
    if ">" in argv:
        argv, target = argv[: argv.index(">")], argv[argv.index(">") + 1]
    last = max([i for i, a in enumerate(argv) if "=" in a and not a.startswith("-")] + [1])
    capsys.readouterr()
    assert main(argv[: last + 1] + list(extra) + argv[last + 1 :]) == 0, command
    out = capsys.readouterr().out
    if target:
        Path(target).write_text(out, encoding="utf-8")
    return out
