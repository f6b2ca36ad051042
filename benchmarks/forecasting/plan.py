"""The benchmark's plan (plan.yaml): minutes, ensemble members, input lengths and config
settings per dataset, model and horizon, read and checked whole into run.py's rows."""

from __future__ import annotations

from pathlib import Path

from report import DATASETS, MODELS

from transduce.config import apply_overrides
from transduce.config_files import read_yaml
from transduce.errors import UserError
from transduce.tasks.forecasting.config import ForecastConfig


def plan_tasks(
    plan_file: Path, datasets: str | None, models: str | None, horizons: list[int] | None
) -> list[dict]:
    """The rows a plan asks for (of these datasets, models and horizons only, if given),
    each with its minutes, members, input length and config settings; the plan is checked
    whole first."""
    try:
        plan = read_yaml(plan_file)
    except Exception as error:  # noqa: BLE001 - a missing or malformed file: say which
        raise SystemExit(f"--plan {plan_file}: {error}") from None
    tasks = []
    for dataset, by_model in plan.items():
        if dataset not in DATASETS:
            raise SystemExit(
                f"{plan_file}: unknown dataset {dataset!r}; known: {', '.join(DATASETS)}"
            )
        if not isinstance(by_model, dict):
            raise SystemExit(f"{plan_file}: {dataset} must map models to settings")
        for model, settings in by_model.items():
            where = f"{plan_file}: {dataset}.{model}"
            if model not in MODELS:
                raise SystemExit(f"{where}: unknown model; known: {', '.join(MODELS)}")
            settings = settings or {}
            unknown = set(settings) - {"minutes", "members", "input_length", "settings"}
            if unknown:
                raise SystemExit(
                    f"{where}: unknown setting {sorted(unknown)[0]!r}; known: "
                    "minutes, members, input_length, settings"
                )
            minutes = settings.get("minutes")
            if not isinstance(minutes, (int, float)) or isinstance(minutes, bool) or minutes <= 0:
                raise SystemExit(f"{where}: minutes must be a positive number, not {minutes!r}")
            for horizon in DATASETS[dataset][2]:
                members = _per_horizon(settings.get("members"), horizon, where, "members")
                length = _per_horizon(settings.get("input_length"), horizon, where, "input_length")
                tasks.append(
                    {
                        "dataset": dataset,
                        "horizon": horizon,
                        "model": model,
                        "minutes": float(minutes),
                        "settings": _config_items(settings.get("settings"), horizon, where, model),
                        "input_lengths": [length] if length else None,
                        "members": [members] if members else None,
                    }
                )
    wanted = [
        (datasets or "").split(",") if datasets else None,
        (models or "").split(",") if models else None,
        horizons,
    ]
    for name, chosen in zip(("dataset", "model", "horizon"), wanted):
        if chosen:
            missing = set(chosen) - {t[name] for t in tasks}
            if missing:
                raise SystemExit(f"{plan_file} has no {name} {sorted(map(str, missing))[0]}")
            tasks = [t for t in tasks if t[name] in chosen]
    return tasks


def _per_horizon(value, horizon: int, where: str, name: str) -> int | None:
    """A plan setting given once for every horizon, or per horizon ({96: 2, 720: 1})."""
    if isinstance(value, dict):
        if horizon not in value:
            raise SystemExit(f"{where}: {name} names no value for horizon {horizon}")
        value = value[horizon]
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise SystemExit(f"{where}: {name} must be a whole number of 1 or more, not {value!r}")
    return value


def _config_items(value, horizon: int, where: str, model: str) -> list[str]:
    """A plan's ``settings`` for one row as key=value items: one mapping of config keys for
    every horizon, or one per horizon ({720: {dropout: 0.2}}; a horizon left out has none).
    Each is checked as the command line's would be, so a wrong one stops the plan first."""
    if value is None:
        return []
    if not isinstance(value, dict):
        raise SystemExit(f"{where}: settings must map config keys to values")
    if value and all(isinstance(k, int) and not isinstance(k, bool) for k in value):
        value = value.get(horizon) or {}
        if not isinstance(value, dict):
            raise SystemExit(
                f"{where}: settings for horizon {horizon} must map config keys to values"
            )
    items = []
    for key, item in value.items():
        if isinstance(item, (dict, list)) or item is None:
            raise SystemExit(f"{where}: settings.{key} must be one value, not {item!r}")
        items.append(f"{key}={str(item).lower() if isinstance(item, bool) else item}")
    try:
        apply_overrides(ForecastConfig(), [f"model={model}", *items], f"{where} settings")
    except UserError as error:
        raise SystemExit(str(error)) from None
    return items
