"""A Griffe extension for the API reference: the docstrings' Sphinx roles
(:class:`~transduce.x.Y`, :func:`load`, :mod:`...`, :meth:`...`) become mkdocstrings
cross-references, so the page shows ``Y`` as a link instead of the role's raw text."""

from __future__ import annotations

import re
from pathlib import Path

import griffe

ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):`(~?)([\w.]+)`")
# the objects the API page documents: a role naming another becomes code, not a dead link
DOCUMENTED = set(
    re.findall(
        r"^::: ([\w.]+)",
        (Path(__file__).parent / "reference" / "api.md").read_text(encoding="utf-8"),
        flags=re.M,
    )
)


def _link(match: re.Match) -> str:
    short, path = match.group(1), match.group(2)
    shown = path.rsplit(".", 1)[-1] if short else path
    if not any(path == d or path.startswith(d + ".") for d in DOCUMENTED):
        return f"`{shown}`"
    return f"[`{shown}`][{path}]"


class SphinxRoles(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:  # griffe >= 1
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_link, obj.docstring.value)
