"""Reading text files strictly: UTF-8, one sentence per line, parallel files aligned."""

from __future__ import annotations

import os

from transduce.errors import UserError


def decode_utf8(data: bytes, origin: str) -> str:
    """Decode ``data``, or raise a UserError naming ``origin`` and the line that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise UserError(
            f"{origin}:{line}: invalid UTF-8 ({error.reason}); convert the file "
            "to UTF-8 (e.g. iconv -t UTF-8)"
        ) from None


def split_lines(text: str) -> list[str]:
    """Lines without their endings; a final newline ends the last line, it starts none."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def read_lines(path: str | os.PathLike) -> list[str]:
    """All lines of a UTF-8 file, without line endings.

    Raises:
        UserError: the file is missing, empty, or not valid UTF-8 (the
            message gives the line).
    """
    try:
        data = open(path, "rb").read()
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    return lines_of(data, str(path))


def lines_of(data: bytes, name: str) -> list[str]:
    """The lines of a whole file's bytes (``name``: the file, for messages), as
    :func:`read_lines` gives them; a UserError if empty or not valid UTF-8."""
    text = decode_utf8(data, name)
    if not text:
        raise UserError(f"{name}: the file is empty; give a file with one sentence per line")
    return split_lines(text)


def read_parallel(
    src_path: str | os.PathLike, tgt_path: str | os.PathLike
) -> tuple[list[str], list[str]]:
    """Source and target lines of a parallel corpus, which must have equally many lines."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise UserError(
            f"{src_path}: {len(src)} lines but {tgt_path} has {len(tgt)}; "
            f"parallel files must align line by line (they part at line "
            f"{min(len(src), len(tgt)) + 1})"
        )
    return src, tgt
