"""Files that are either whole or absent: a run that dies never leaves half an output.

Everything transduce writes goes through here. A file is written beside its destination
under a name that marks it as staging (``.NAME.XXXX.tmp``), flushed to disk, given the
permissions a plain ``open()`` would give it (the umask's for a new file, the old file's
for a replaced one), and renamed into place. :func:`remove_staging` sweeps what a killed
process left. :func:`recorded_path` says how a committed results file names a path.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterator

from transduce.errors import UserError

STAGING = re.compile(r"\..+\.[A-Za-z0-9_]{8}\.tmp")  # what mkstemp/mkdtemp name below


def umask() -> int:
    """The process umask (read without changing it where /proc allows)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)  # elsewhere: the classic read-and-restore
    os.umask(mask)
    return mask


def _mode_for(path: Path, directory: bool) -> int:
    """The mode ``open()`` (or ``mkdir``) would leave ``path`` with."""
    try:
        return stat.S_IMODE(path.stat().st_mode)  # replacing a file keeps its mode
    except OSError:
        return (0o777 if directory else 0o666) & ~umask()


def fsync_directory(path: Path) -> None:
    """Make a rename in ``path`` durable (a no-op where directories cannot be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _is_special(path: Path) -> bool:
    """A device, a named pipe or a socket: something to write into, never to replace."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` atomically, on
    failure it is deleted. Write to the yielded path, not to ``path``.

    A symbolic link is written through, as ``cp`` and editors do: its target is replaced
    atomically and the link stays. A device, named pipe or socket (``--output /dev/null``, a
    FIFO, ``>(gzip ...)``) is yielded itself, to be written straight into: renaming a file
    over it would replace the device node, not write to it.
    """
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    if _is_special(path):
        try:
            yield path
        except OSError as error:  # a write's error (ENOSPC, EPIPE) names no file
            if error.filename is None:
                raise type(error)(error.errno, error.strerror, str(path)) from None
            raise
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode_for(path, directory=False)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        try:
            os.replace(tmp, path)
        except OSError as error:  # named by the file asked for, not by the temporary one
            raise type(error)(error.errno, error.strerror, str(path)) from None
        fsync_directory(path.parent)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, replace: bool = False) -> Iterator[Path]:
    """Like :func:`atomic_path` for a new directory: fill the yielded one, and it becomes
    ``path`` whole, or not at all. ``path`` must not exist, unless ``replace``: then the old
    one is moved aside to a staging name, the new one renamed in, and the old one deleted
    (a kill in between leaves the old one under a staging name for :func:`remove_staging`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode_for(path, directory=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    old = None
    try:
        yield tmp
        os.chmod(tmp, mode)
        if replace and path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
            os.rename(path, old / "old")
        try:
            os.rename(tmp, path)
        except OSError:
            if old is not None and not path.exists():  # put the old one back
                os.rename(old / "old", path)
            raise
        fsync_directory(path.parent)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def remove_staging(
    directory: str | os.PathLike, names: tuple[str, ...] | None = None
) -> list[Path]:
    """Delete the staging files and folders a killed writer left in ``directory`` (only
    those for the destinations in ``names``, when given). Call it only where no other
    process may be writing (under a run's lock). Returns what it removed."""
    directory, removed = Path(directory), []
    if not directory.is_dir():
        return removed
    for entry in directory.iterdir():
        if not STAGING.fullmatch(entry.name):
            continue
        if names is not None and not any(entry.name.startswith(f".{n}.") for n in names):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def check_writable(path: str | os.PathLike, what: str) -> Path:
    """Raise a UserError unless ``path`` is (or can be made) a directory this process may
    write in. Creates nothing: the nearest existing ancestor is checked instead."""
    path = Path(path)
    probe = path
    while not probe.exists() and probe != probe.parent:
        if probe.is_symlink():
            raise UserError(f"{probe}: a broken link; give {what} a real folder")
        probe = probe.parent
    if not probe.is_dir():
        raise UserError(f"{probe}: is a file where {what} needs a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(f"{probe}: not writable; give {what} a folder you may write in")
    return path


def check_output_file(path: str | os.PathLike, what: str) -> Path:
    """Raise a UserError unless ``path`` can be written as a file: not a folder, and in a
    folder this process may write in (see :func:`check_writable`). Creates nothing."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{path}: is a folder; give {what} a file name")
    check_writable(path.absolute().parent, what)
    return path


def recorded_path(path: str | os.PathLike, root: str | os.PathLike) -> str:
    """``path`` as a committed results file records it: relative to ``root`` (a repository)
    when inside it, else by its last component alone, so the file names no one's folders."""
    path, root = Path(path).resolve(), Path(root).resolve()
    return str(path.relative_to(root)) if path.is_relative_to(root) else path.name
