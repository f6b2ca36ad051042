"""Fetching Multi30k Task 1 (Elliott et al. 2016, 2017): raw, untokenized, original casing."""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from transduce.data.text import decode_utf8, split_lines
from transduce.errors import UserError
from transduce.io import check_writable, remove_staging

# The multi30k/dataset repository's gzipped raw files.
DEFAULT_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw"
SPLITS = {"train": 29000, "val": 1014, "test_2016_flickr": 1000}
LANGUAGES = ("en", "de", "fr")


def _download(url: str, target: Path) -> None:
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(target, "wb") as out:
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise UserError(
            f"{url}: download failed ({reason}); check the connection, or copy "
            "the files yourself and use --from LOCAL_DIR"
        ) from None


def _gunzip(source: Path, target: Path) -> None:
    try:
        with gzip.open(source, "rb") as f, open(target, "wb") as out:
            shutil.copyfileobj(f, out)
    except (OSError, EOFError) as error:
        raise UserError(f"{source}: not a valid gzip file ({error})") from None


def _check(path: Path, expected_lines: int, origin: str) -> None:
    lines = len(split_lines(decode_utf8(path.read_bytes(), origin)))
    if lines != expected_lines:
        raise UserError(
            f"{origin}: {lines} lines, expected {expected_lines}; the file is "
            "incomplete or not Multi30k"
        )


def fetch_multi30k(
    dest: str | os.PathLike,
    local: str | os.PathLike | None = None,
    url: str = DEFAULT_URL,
    log=print,
) -> list[Path]:
    """Put the nine raw files (train/val/test_2016_flickr × en/de/fr) into ``dest``.

    From ``local`` (a folder with the files, plain or .gz) when given, else downloaded from
    ``url``. Every file is checked (UTF-8, line count) before any is moved into ``dest``, so a
    failure leaves ``dest`` as it was.
    """
    dest = check_writable(dest, "--dest")
    dest.mkdir(parents=True, exist_ok=True)
    remove_staging(dest, ("fetch",))  # what a killed fetch left
    names = [f"{split}.{lang}" for split in SPLITS for lang in LANGUAGES]
    with tempfile.TemporaryDirectory(dir=dest, prefix=".fetch.", suffix=".tmp") as tmp:
        staged = []
        for name in names:
            target = Path(tmp) / name
            if local is not None:
                origin = _copy_local(Path(local), name, target)
            else:
                origin = f"{url}/{name}.gz"
                log(f"downloading {origin}")
                _download(origin, target.with_suffix(target.suffix + ".gz"))
                _gunzip(target.with_suffix(target.suffix + ".gz"), target)
            _check(target, SPLITS[name.rsplit(".", 1)[0]], origin)
            staged.append(target)
        for target in staged:
            os.replace(target, dest / target.name)
    return [dest / name for name in names]


def _copy_local(local: Path, name: str, target: Path) -> str:
    if (local / name).is_file():
        shutil.copyfile(local / name, target)
        return str(local / name)
    if (local / f"{name}.gz").is_file():
        _gunzip(local / f"{name}.gz", target)
        return str(local / f"{name}.gz")
    raise UserError(f"{local}: has neither {name} nor {name}.gz")
