"""The forecasting benchmark's results file, benchmarks/forecasting/results.json: its rows
(one per dataset, model and horizon) and the commands that made them, merged row by row so
that the benchmark can run a part at a time (run.py)."""

from __future__ import annotations

import json
from pathlib import Path

from transduce.io import write_text

HERE = Path(__file__).parent


def save(out: Path, results: list[dict], entry: dict) -> None:
    """Merge this command's rows so far into results.json (replacing the rows of the same
    dataset, model and horizon). Rows do not record the command that made them, so the
    earlier commands (and re-scorings) are dropped only once this one has replaced every row."""
    saved = load_saved(out)  # read now: another may have written
    kept = others(saved, results)
    runs = [r for r in saved["runs"] if r["command"] != entry["command"]]
    if not kept:  # this command made every row: the others' figures are gone
        runs, saved["rescored"] = [], []
    saved.update(results=kept + results, runs=[*runs, dict(entry)])
    if not saved.get("rescored"):
        saved.pop("rescored", None)
    write_text(out / "results.json", json.dumps(saved, indent=2) + "\n")


def others(saved: dict, results: list[dict]) -> list[dict]:
    """The saved rows that none of ``results`` replaces (same dataset, model and horizon)."""
    done = {key(r) for r in results}
    return [r for r in saved["results"] if key(r) not in done]


def key(result: dict) -> tuple:
    return result["dataset"], result["model"], result["horizon"]


def load_saved(out: Path = HERE) -> dict:
    """results.json as {"runs": [...], "results": [...]}, or empty; the file's first form
    (one "command" for every row) becomes one entry of "runs"."""
    path = out / "results.json"
    if not path.exists():
        return {"runs": [], "results": []}
    saved = json.loads(path.read_text())
    if "runs" not in saved:
        saved = {
            "runs": [
                {
                    "command": saved["command"],
                    "total_seconds": saved["total_seconds"],
                    "minutes": saved["minutes"],
                    "rows": len(saved["results"]),
                }
            ],
            "results": saved["results"],
        }
    return saved
