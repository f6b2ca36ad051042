"""Labelled text in the formats people have: a label per sentence (``label<TAB>text``, or
TREC's ``COARSE:fine text``) and a label per word (CoNLL's ``token<TAB>tag`` with sentences
split by blank lines, and CoNLL-U's ten columns). A malformed line is a one-line error
naming the file and line; invalid UTF-8 too, unless the reader is told to replace it (TREC's
own training file holds one such byte), in which case the lines are named in a warning.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from transduce.errors import UserError

log = logging.getLogger("transduce.data")
FORMATS = ("tsv", "trec")  # sentence labels
LINES = "lines"  # plain text, a sentence a line (no label)
TAG_FORMATS = ("conll", "conllu")  # word labels


@dataclass
class Sentences:
    """Sentences and a label each: ``texts``, ``labels``, and the file line of each."""

    texts: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


@dataclass
class Tagged:
    """Sentences of words and a tag a word: ``words``, ``tags`` (lists per sentence), and
    the file line each sentence starts on."""

    words: list[list[str]] = field(default_factory=list)
    tags: list[list[str]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


def _lines(path: str | Path, replace_invalid: bool) -> list[str]:
    """The file's lines, decoded as UTF-8 line by line so that an error names its line."""
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    out, replaced = [], []
    for number, line in enumerate(raw.removeprefix(b"\xef\xbb\xbf").split(b"\n"), 1):
        try:
            out.append(line.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as error:
            if not replace_invalid:
                raise UserError(
                    f"{path}:{number}: byte 0x{line[error.start]:02x} at column "
                    f"{error.start + 1} is not UTF-8; save the file as UTF-8"
                ) from None
            replaced.append(number)
            out.append(line.decode("utf-8", errors="replace").rstrip("\r"))
    if replaced:
        log.warning(
            f"transduce: warning: {path}: bytes that are not UTF-8 replaced by U+FFFD on "
            f"line{'s' * (len(replaced) > 1)} {', '.join(map(str, replaced[:5]))}"
        )
    if out and out[-1] == "":
        out.pop()  # the newline that ends the last line
    return out


def read_sentences(
    path: str | Path, format: str = "tsv", replace_invalid: bool = False
) -> Sentences:
    """Labelled sentences: ``label<TAB>text`` (``tsv``), or TREC's ``COARSE:fine text``
    (``trec``: the coarse class is the label). Blank lines are skipped.

    Raises:
        UserError: an unknown format, a line without a label or a text, an empty file.
    """
    if format not in FORMATS:
        raise UserError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    found = Sentences()
    for number, line in enumerate(_lines(path, replace_invalid), 1):
        if not line.strip():
            continue
        if format == "tsv":
            label, tab, text = line.partition("\t")
            wanted = "label<TAB>text"
        else:
            head, tab, text = line.partition(" ")
            label, colon, _ = head.partition(":")
            tab = tab and colon
            wanted = "COARSE:fine question (TREC's format)"
        if not tab or not label.strip() or not text.strip():
            raise UserError(f"{path}:{number}: expected {wanted}, got {line[:60]!r}")
        found.texts.append(text.strip())
        found.labels.append(label.strip())
        found.lines.append(number)
    if not found.texts:
        raise UserError(f"{path}: no labelled sentence in it; give lines of {wanted_of(format)}")
    return found


def read_lines(path: str | Path, replace_invalid: bool = False) -> Sentences:
    """Plain text, a sentence a line (blank lines skipped), with no label (``""``)."""
    found = Sentences()
    for number, line in enumerate(_lines(path, replace_invalid), 1):
        if line.strip():
            found.texts.append(line.strip())
            found.labels.append("")
            found.lines.append(number)
    if not found.texts:
        raise UserError(f"{path}: no sentence in it; give text, a sentence a line")
    return found


def wanted_of(format: str) -> str:
    return "label<TAB>text" if format == "tsv" else "COARSE:fine question"


def read_tagged(path: str | Path, format: str = "conll", column: int = 4) -> Tagged:
    """Tagged sentences: CoNLL's ``token<TAB>tag`` lines, a sentence ending at a blank line
    (or a line of only a tab, as WNUT 2017's files have); or CoNLL-U (``conllu``), whose
    word (column 2) is tagged by ``column`` (4: UPOS), comment lines, multiword-token
    ranges (``1-2``) and empty nodes (``8.1``) skipped.

    Raises:
        UserError: an unknown format, a line of the wrong number of columns, a CoNLL-U word
            numbered out of order, an empty file.
    """
    if format not in TAG_FORMATS:
        raise UserError(f"format must be one of {', '.join(TAG_FORMATS)}, not {format!r}")
    found, words, tags, start = Tagged(), [], [], 0

    def close() -> None:
        if words:
            found.words.append(list(words))
            found.tags.append(list(tags))
            found.lines.append(start)
            words.clear()
            tags.clear()

    for number, line in enumerate(_lines(path, False), 1):
        if not line.strip():
            close()
            continue
        if format == "conllu" and line.startswith("#"):
            continue
        fields = line.split("\t")
        if format == "conll":
            if len(fields) != 2 or not fields[0] or not fields[1]:
                raise UserError(
                    f"{path}:{number}: expected token<TAB>tag, got {len(fields)} field"
                    f"{'s' * (len(fields) != 1)}: {line[:60]!r}"
                )
            word, tag = fields
        else:
            if len(fields) != 10:
                raise UserError(
                    f"{path}:{number}: a CoNLL-U line has 10 tab-separated columns, this one "
                    f"{len(fields)}: {line[:60]!r}"
                )
            if "-" in fields[0] or "." in fields[0]:
                continue  # a multiword token's range, or an empty node: not a word
            if fields[0] != str(len(words) + 1):
                raise UserError(
                    f"{path}:{number}: word number {fields[0]!r} where {len(words) + 1} was due"
                )
            word, tag = fields[1], fields[column - 1]
        if not words:
            start = number
        words.append(word)
        tags.append(tag)
    close()
    if not found.words:
        raise UserError(f"{path}: no tagged sentence in it")
    return found
