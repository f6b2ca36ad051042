"""The settings a tuning has scored so far, kept in the run so that a tuning that dies
resumes from them."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from transduce import runs

log = logging.getLogger("transduce")


class Scored:
    """The rows of one tuning scored so far, in ``folder/tune.partial.jsonl``: a tuning that
    dies (Ctrl-C, a lost machine) resumes from them when given again, instead of translating
    the validation data again for every setting. A row is reused only if everything that
    made it is the same (``made``: checkpoints, beam, metric, lines, precision); the file
    goes once the choice is written."""

    def __init__(self, folder: Path, made: dict, write: bool) -> None:
        self.path, self.made, self.write = folder / runs.TUNE_PARTIAL, made, write
        self.rows: dict[str, dict] = {}
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            lines = []
        for line in lines:  # a line cut short by the death of the process is skipped
            try:
                entry = json.loads(line)
                if entry["made"] == made:
                    self.rows[entry["key"]] = entry["row"]
            except (json.JSONDecodeError, KeyError, TypeError):
                continue

    @staticmethod
    def key(*setting) -> str:
        return json.dumps(setting)

    def get(self, *setting) -> dict | None:
        return self.rows.get(self.key(*setting))

    def add(self, row: dict, *setting) -> dict:
        self.rows[self.key(*setting)] = row
        if self.write:
            with open(self.path, "a", encoding="utf-8") as file:
                file.write(
                    json.dumps({"made": self.made, "key": self.key(*setting), "row": row}) + "\n"
                )
        return row

    def done(self) -> None:
        if self.write:
            self.path.unlink(missing_ok=True)


def digest(sources: list[str], references: list[str]) -> str:
    """A fingerprint of the lines tuned on: rows scored on other lines are not reused."""
    return hashlib.sha256(json.dumps([sources, references]).encode()).hexdigest()[:16]


def resumed(folder: Path, made: dict, write: bool, total: int) -> Scored:
    scored = Scored(folder, made, write)
    if scored.rows:
        log.warning(
            f"transduce: {scored.path}: resuming, {min(len(scored.rows), total)} of "
            f"{total} settings already scored"
        )
    return scored
