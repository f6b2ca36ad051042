"""Source lines as the model reads them, and what it could not read of them.

Every way in (the command line, the Python API, the server) goes through
:func:`read_sources`: control characters are removed, a line is cut to :data:`MAX_CHARS`
characters and its subwords to what the model's positions hold, and each of these, and any
word the vocabulary does not know (it becomes ``<unk>``), is a note on that line. The notes
are warnings to the user: the demo model turns "hello world" into a number without them.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Sequence

# The limits every way in shares: a longer line is cut with a note (the server refuses it).
# A 100,000-character line took 13.5 s to tokenise before its subwords were cut to what the
# model reads anyway.
MAX_CHARS = 2000
EXTRA_OUTPUT = 50  # outputs may be 50 tokens longer than their source (paper §6.1)
# C0 and C1 control characters and DEL; a tab reads as a space. NUL, a bell or an escape
# sequence in a line of text is a fault of whatever produced it, and the tokenizer would
# read it as part of a word.
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
log = logging.getLogger(__name__)


@dataclass
class Sources:
    """Subword ids of each line, and ``notes[i]``: what the model could not read of line
    ``i`` as given (empty when it read all of it)."""

    ids: list[list[int]]
    notes: list[list[str]] = field(default_factory=list)

    def warnings(self) -> list[str]:
        """Every note, each naming its line (1-based)."""
        return [f"line {i + 1}: {note}" for i, notes in enumerate(self.notes) for note in notes]


def without_controls(line: str) -> tuple[str, int]:
    """``line`` without control characters (a tab becomes a space), and how many went."""
    kept, removed = _CONTROLS.subn("", line.replace("\t", " "))
    return kept, removed


def sentence_case(line: str) -> str:
    """A line written all in capitals ("A MAN RIDES A BIKE.") in sentence case ("A man rides
    a bike."): models trained on ordinary text loop on unseen all-capital subwords."""
    letters = [c for c in line if c.isalpha()]
    if len(letters) < 2 or not all(c.isupper() for c in letters):
        return line
    return line[:1] + line[1:].lower()


def _quoted(parts: list[str], most: int = 5) -> str:
    shown = ", ".join(f'"{p}"' for p in parts[:most])
    return shown + (f" and {len(parts) - most} more" if len(parts) > most else "")


def read_sources(tokenizer, lines: Sequence[str], max_source: int) -> Sources:
    """``lines`` (already in sentence case where they should be) as subword ids, each cut to
    ``max_source``, with the notes of what was removed, cut or unknown."""
    clean, notes = [], [[] for _ in lines]
    for i, line in enumerate(lines):
        line, removed = without_controls(line)
        if removed:
            notes[i].append(f"{removed} control character{'s' * (removed > 1)} removed")
        if len(line) > MAX_CHARS:
            notes[i].append(f"cut to {MAX_CHARS} characters")
            line = line[:MAX_CHARS]
        clean.append(line)
    ids = tokenizer.encode(clean)
    for i, seq in enumerate(ids):
        unknown = tokenizer.unknown(clean[i])  # what maps to unk, or is skipped
        if unknown:
            notes[i].append(
                f"{_quoted(unknown)} unknown to the model (never seen in "
                "training); its translation is a guess"
            )
        if len(seq) > max_source:
            notes[i].append(f"cut to {max_source} subwords")
            ids[i] = seq[:max_source]
    return Sources(ids, notes)


def encode_sources(tokenizer, lines: Sequence[str], max_source: int) -> list[list[int]]:
    """:func:`read_sources`'s ids, its notes logged as warnings, so that every line still
    gets its one output line and the user hears what the model could not read."""
    sources = read_sources(tokenizer, lines, max_source)
    for warning in sources.warnings():
        log.warning(f"transduce: note: {warning}")
    return sources.ids
