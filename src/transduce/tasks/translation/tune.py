"""Choose a run's decoding on its validation data: how many checkpoints to average, the
length penalty α and the n-gram block, by BLEU on the run's ``valid_prefix`` files (never
on test). The choice is written to ``RUN/decoding.json`` and the chosen average to
``RUN/averaged.pt``, which every later translation uses unless told otherwise.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
import time
from pathlib import Path
from typing import Sequence

from transduce import runs
from transduce.data.text import read_lines
from transduce.decoding import defaults
from transduce.decoding.ensemble import check_vocabularies
from transduce.decoding.translator import Translator
from transduce.device import pick_device, resolve_precision
from transduce.errors import UserError
from transduce.evaluation import corpus_scores, looping_rate
from transduce.io import check_writable
from transduce.logs import progress
from transduce.tasks.translation.config import TrainConfig
from transduce.tasks.translation.loading import load_ensemble, load_translation
from transduce.tasks.translation.scored import digest, resumed

log = logging.getLogger("transduce")
METRICS = ("bleu", "bleu_tok", "chrf")
NOISE = 0.1  # BLEU points: settings this close to the best are equally good on val


def choose(rows: list[dict], metric: str) -> dict:
    """The row of best ``metric``; among those within :data:`NOISE` of it, the one whose
    outputs loop least (then the better score, then the earlier row)."""
    top = max(r[metric] for r in rows)
    close = [r for r in rows if r[metric] >= top - NOISE]
    return min(close, key=lambda r: (r["looping_rate"], -r[metric]))


@dataclasses.dataclass(frozen=True)
class Grid:
    """The settings tried: every combination of ``last`` × ``lenpen`` × ``no_repeat_ngram``
    at one ``beam`` size, scored by ``metric`` on the first ``sentences`` lines (0: all)."""

    last: Sequence[int] = (5, 8, 10)
    lenpen: Sequence[float] = (0.6, 1.0, 1.4)
    no_repeat_ngram: Sequence[int] = (0, 3)
    beam: int = 5
    metric: str = "bleu"
    sentences: int = 0

    def check(self) -> None:
        if not self.last or min(self.last) < 1:
            raise UserError("--last: give numbers of checkpoints of at least 1")
        if not self.lenpen or not all(defaults.lenpen_ok(a) and a <= 5 for a in self.lenpen):
            raise UserError("--lenpen: give length penalties between 0 and 5")
        if not self.no_repeat_ngram or min(self.no_repeat_ngram) < 0:
            raise UserError("--no-repeat-ngram: give sizes of at least 0 (0: off)")
        if self.beam < 1 or self.sentences < 0:
            raise UserError("--beam must be at least 1 and --sentences at least 0")
        if self.metric not in METRICS:
            raise UserError(f"--metric must be one of {', '.join(METRICS)}, not {self.metric!r}")


def validation_data(run_dir: Path, sentences: int = 0) -> tuple[list[str], list[str], str]:
    """(sources, references, target language) of the run's validation files."""
    started = runs.started_config(run_dir, TrainConfig)
    if started is None:
        raise UserError(
            f"{run_dir}: not a translation run directory (no config.yaml or step checkpoints)"
        )
    cfg = started[0]
    stem = Path(cfg.data_dir) / cfg.valid_prefix
    sources = read_lines(f"{stem}.{cfg.src_lang}")
    references = read_lines(f"{stem}.{cfg.tgt_lang}")
    if len(sources) != len(references):
        raise UserError(
            f"{stem}.{cfg.src_lang} has {len(sources)} lines but "
            f"{stem}.{cfg.tgt_lang} has {len(references)}; give aligned files"
        )
    if sentences:
        sources, references = sources[:sentences], references[:sentences]
    return sources, references, cfg.tgt_lang


def _score(
    translator: Translator,
    sources: list[str],
    references: list[str],
    lang: str,
    grid: Grid,
    lenpen: float,
    block: int,
    bar,
) -> dict:
    """One setting's row: validation scores, looping rate and seconds taken."""
    start = time.perf_counter()
    found = translator.search(
        sources, grid.beam, lenpen, progress=bar, **defaults.search_options(block)
    )
    hyps = [h[0][0] for h in found]
    scores = corpus_scores(hyps, references, lang if grid.metric == "bleu_tok" else None)
    return {
        "lenpen": lenpen,
        "no_repeat_ngram": block,
        **{k: v for k, v in scores.items() if "signature" not in k},
        "looping_rate": round(looping_rate(hyps, sources), 4),
        "seconds": round(time.perf_counter() - start, 1),
    }


def tune(
    run_dir: str | os.PathLike,
    grid: Grid = Grid(),
    device: str = "auto",
    precision: str = "auto",
    write: bool = True,
) -> tuple[defaults.Decoding, list[dict]]:
    """Translate the run's validation data with every setting of ``grid``; returns the
    setting :func:`choose` picks and a row of scores per setting. With ``write``, stores the
    choice in ``decoding.json`` and its average in ``averaged.pt``."""
    grid.check()
    run_dir = Path(run_dir)
    if write:  # before minutes of translating, not after
        check_writable(run_dir, "the run directory")
    steps, loaded = _newest(run_dir)
    sources, references, lang = validation_data(run_dir, grid.sentences)
    dev = pick_device(device)
    translator = Translator(
        model=loaded.model,
        tokenizer=loaded.tokenizer,
        device=dev,
        precision=resolve_precision(precision, dev),
    )
    lasts = _lasts(run_dir, len(steps), grid)
    settings = list(itertools.product(lasts, grid.lenpen, grid.no_repeat_ngram))
    scored = resumed(
        run_dir,
        {
            "checkpoints": [p.name for p in steps],
            "beam": grid.beam,
            "metric": grid.metric,
            "data": digest(sources, references),
            "precision": translator.precision,
        },
        write,
        len(settings),
    )
    rows = []
    todo = [s for s in settings if scored.get(*s) is None]
    with progress(len(todo) * len(sources), "tuning on validation", "sent") as bar:
        for last in lasts:
            if any(s[0] == last for s in todo):
                averaged = runs.average_checkpoints(steps[-last:])
                translator.model.load_state_dict(averaged["model"])
            for lenpen, block in itertools.product(grid.lenpen, grid.no_repeat_ngram):
                rows.append(
                    scored.get(last, lenpen, block)
                    or scored.add(
                        {
                            "last": last,
                            **_score(
                                translator, sources, references, lang, grid, lenpen, block, bar
                            ),
                        },
                        last,
                        lenpen,
                        block,
                    )
                )
    best = choose(rows, grid.metric)
    where = run_dir / runs.DECODING
    chosen = defaults.Decoding(
        beam=grid.beam,
        lenpen=best["lenpen"],
        no_repeat_ngram=best["no_repeat_ngram"],
        last=best["last"],
        source=f"chosen on validation data, {where}",
    )
    if write:  # averaged again rather than holding every average in memory meanwhile
        _store(run_dir, chosen, grid, best, rows, steps, len(sources))
        scored.done()
    return chosen, rows


def _lasts(run_dir: Path, steps: int, grid: Grid) -> list[int]:
    """How many of the newest checkpoints to average, each setting of the grid capped at
    the ``steps`` there are (with a note when that cuts one)."""
    if steps < max(grid.last):
        log.warning(
            f"transduce: note: {run_dir} has {steps} step checkpoints; averaging at most {steps}"
        )
    return sorted({min(n, steps) for n in grid.last})


def _newest(run_dir: Path):
    """The run's step checkpoints and its newest one loaded; a UserError where there is none
    or the run is not a translation run."""
    steps = runs.step_checkpoints(run_dir)
    if not steps:
        raise UserError(f"{run_dir}: no step checkpoints to choose from; train first")
    loaded = load_translation(steps[-1], verbose=False)
    if loaded.state.get("kind", "translation") != "translation":
        raise UserError(
            f"{run_dir}: holds a {loaded.state['kind']} model; tune chooses the "
            "decoding of translation runs"
        )
    return steps, loaded


def _store(run_dir: Path, chosen, grid: Grid, best: dict, rows: list, steps: list, lines: int):
    """The chosen average in ``averaged.pt`` and the choice with its grid in ``decoding.json``."""
    runs.average_run(run_dir, best["last"])
    defaults.write(
        run_dir,
        chosen,
        {
            "chosen_by": f"transduce tune: best {grid.metric} on {lines} lines of validation data",
            "metric": grid.metric,
            grid.metric: best[grid.metric],
            "averaged": [p.name for p in steps[-best["last"] :]],
            "grid": rows,
        },
    )


def _averaged(run_dir: Path) -> list[str]:
    """The checkpoints that ``tune`` averaged into ``run_dir/averaged.pt``, as its
    ``decoding.json`` names them; [] where it names none (or is missing or damaged)."""
    path = run_dir / runs.DECODING
    if not (run_dir / runs.AVERAGED).is_file() or not path.is_file():
        return []
    try:
        averaged = json.loads(path.read_text(encoding="utf-8")).get("averaged") or []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return []
    return list(averaged) if isinstance(averaged, list) else []


def _tuned(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds an average that ``tune`` chose from its newest checkpoints
    (``decoding.json`` names them, ending with the newest one there is)."""
    steps, averaged = runs.step_checkpoints(run_dir), _averaged(run_dir)
    return bool(steps) and bool(averaged) and averaged[-1] == steps[-1].name


def tune_ensemble(
    run_dirs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    grid: Grid = Grid(),
    device: str = "auto",
    precision: str = "auto",
) -> tuple[defaults.Decoding, list[dict]]:
    """Choose the decoding of an ensemble of runs on the first run's validation data.

    Each member is first tuned alone (:func:`tune`: its average and its own decoding),
    unless its ``decoding.json`` already names an average of its newest checkpoints. Then
    the ensemble of those averages is searched with every length penalty × n-gram block of
    ``grid``; ``out`` receives ``ensemble.json`` (the members) and ``decoding.json`` (the
    choice). Returns the choice and a row of scores per setting."""
    # size: checks, scoring and writing of one ensemble, in order; tune_run is its twin
    grid.check()
    run_dirs, out = [Path(r) for r in run_dirs], Path(out)
    if len(run_dirs) < 2:
        raise UserError("an ensemble needs at least two run directories")
    if out.resolve() in {r.resolve() for r in run_dirs}:
        raise UserError(f"--output {out}: give a directory of its own, not one of the runs")
    check_writable(out, "--output")
    sources, references, lang = validation_data(run_dirs[0], grid.sentences)
    tokenizers = []
    for run_dir in run_dirs:  # every member checked before minutes of tuning
        if run_dir is not run_dirs[0] and validation_data(run_dir, grid.sentences)[2] != lang:
            raise UserError(
                f"{run_dir}: translates into another language than "
                f"{run_dirs[0]}; ensemble runs of one language pair"
            )
        steps = runs.step_checkpoints(run_dir)
        if not steps:
            raise UserError(f"{run_dir}: no step checkpoints to choose from; train first")
        tokenizers.append(load_translation(steps[-1], verbose=False).tokenizer)
    check_vocabularies(run_dirs, tokenizers)
    for run_dir in run_dirs:
        if _tuned(run_dir):
            log.warning(f"transduce: {run_dir}: using the average its decoding.json names")
        else:
            log.warning(f"transduce: {run_dir}: tuning it alone first")
            tune(run_dir, grid, device, precision)
    model, tokenizer, _ = load_ensemble([r / runs.AVERAGED for r in run_dirs], verbose=False)
    dev = pick_device(device)
    translator = Translator(
        model=model, tokenizer=tokenizer, device=dev, precision=resolve_precision(precision, dev)
    )
    settings = list(itertools.product(grid.lenpen, grid.no_repeat_ngram))
    out.mkdir(parents=True, exist_ok=True)
    scored = resumed(
        out,
        {
            "runs": [str(r.resolve()) for r in run_dirs],
            "averaged": [_averaged(r) for r in run_dirs],
            "beam": grid.beam,
            "metric": grid.metric,
            "data": digest(sources, references),
            "precision": translator.precision,
        },
        True,
        len(settings),
    )
    rows = []
    todo = [s for s in settings if scored.get(*s) is None]
    with progress(len(todo) * len(sources), "tuning the ensemble", "sent") as bar:
        for lenpen, block in settings:
            rows.append(
                scored.get(lenpen, block)
                or scored.add(
                    _score(translator, sources, references, lang, grid, lenpen, block, bar),
                    lenpen,
                    block,
                )
            )
    best = choose(rows, grid.metric)
    where = out / runs.DECODING
    chosen = defaults.Decoding(
        beam=grid.beam,
        lenpen=best["lenpen"],
        no_repeat_ngram=best["no_repeat_ngram"],
        last=0,
        source=f"chosen on validation data, {where}",
    )
    defaults.write(
        out,
        chosen,
        {
            "chosen_by": f"transduce tune: best {grid.metric} of the ensemble on {len(sources)} "
            f"lines of {run_dirs[0]}'s validation data",
            "metric": grid.metric,
            grid.metric: best[grid.metric],
            "grid": rows,
        },
    )
    runs.write_ensemble(out, run_dirs, {"created_by": "transduce tune"})
    scored.done()
    return chosen, rows
