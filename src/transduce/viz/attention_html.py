"""One translation's attention as a self-contained interactive HTML page (no network):
the viewer script and style of `transduce serve` are inlined with the weights."""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

from transduce.io import write_text

STATIC = Path(__file__).resolve().parent.parent / "serve" / "static"


def attention_html(maps, title: str = "") -> str:
    """The page for :class:`~transduce.decoding.inspect.AttentionMaps` ``maps``."""
    script = (STATIC / "attention.js").read_text(encoding="utf-8")
    style = (STATIC / "style.css").read_text(encoding="utf-8")
    data = json.dumps(maps.to_dict()).replace("</", "<\\/")  # no early </script>
    heading = html.escape(title or "attention")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{heading}</title>
<style>{style}</style></head>
<body>
<h1>{heading}</h1>
<p class="sub">{html.escape(maps.sentence)} &rarr; {html.escape(maps.translation)}</p>
<div id="attention"></div>
<script>{script}</script>
<script>TransduceAttention.render(document.getElementById("attention"), {data});</script>
</body></html>
"""


def save_attention_html(maps, path: str | os.PathLike, title: str = "") -> None:
    write_text(path, attention_html(maps, title))
