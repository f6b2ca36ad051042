"""Logging to the terminal (without breaking progress bars) and to a file in the run dir."""

from __future__ import annotations

import logging
import os
import sys

from tqdm import tqdm


class _TqdmHandler(logging.Handler):
    """Writes to stderr (looked up at each record, never stdout, which may carry a command's
    output) above any progress bar; skips records logged with extra={"file_only": True}
    (what the command prints to stdout itself)."""

    def emit(self, record: logging.LogRecord) -> None:
        if not getattr(record, "file_only", False):
            tqdm.write(self.format(record), file=sys.stderr)


def show_warnings() -> None:
    """Send the library's warnings (logger "transduce") to stderr; once per process."""
    logger = logging.getLogger("transduce")
    if not any(isinstance(h, _TqdmHandler) for h in logger.handlers):
        handler = _TqdmHandler(logging.WARNING)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)


def setup_logging(run_dir: str | os.PathLike, file_name: str) -> logging.Logger:
    """A logger writing to ``run_dir/file_name`` (``train.log``: logger "transduce.train")
    and to stderr."""
    logger = logging.getLogger(f"transduce.{file_name.split('.')[0]}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    file_handler = logging.FileHandler(os.path.join(run_dir, file_name), encoding="utf-8")
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    terminal = _TqdmHandler()
    terminal.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(file_handler)
    logger.addHandler(terminal)
    return logger


class _Lines:
    """Where a bar draws when stderr is no terminal (a log file, a pipe, CI): each redraw
    becomes a line of its own, where the terminal's carriage returns would have run them
    together on one line with the messages written between them."""

    def __init__(self, file) -> None:
        self.file = file
        self.encoding = getattr(file, "encoding", None)  # tqdm draws in ASCII without it

    def write(self, text: str) -> None:
        for part in text.split("\r"):
            if part.strip():  # without the spaces a shorter redraw pads itself with
                self.file.write(part.rstrip() + "\n")

    def flush(self) -> None:
        self.file.flush()


def progress(total: int, desc: str, unit: str, initial: float = 0, disable: bool = False) -> tqdm:
    """A progress bar with rate and ETA; where stderr is no terminal, a line every 10 s.
    ``initial``: work done before (a resumed run); it does not count towards the rate.
    ``disable``: draw nothing (the processes of a distributed run other than rank 0)."""
    # Counts may be fractional (seconds of training): show them whole.
    bar_format = "{l_bar}{bar}| {n:.0f}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"
    terminal = sys.stderr.isatty()
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        initial=initial,
        dynamic_ncols=terminal,
        disable=disable,
        bar_format=bar_format,
        file=None if terminal else _Lines(sys.stderr),
        mininterval=0.1 if terminal else 10.0,
    )
