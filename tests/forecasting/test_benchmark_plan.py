"""The forecasting benchmark's plan (benchmarks/forecasting/plan.yaml) and its saving of rows."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "benchmarks" / "forecasting" / "run.py"


def _script(name: str):
    """One of benchmarks/forecasting's scripts, imported as a module."""
    spec = importlib.util.spec_from_file_location(f"forecast_{Path(name).stem}",
                                                  SCRIPT.with_name(name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return _script("run.py")


def test_shipped_plan_covers_every_row_once(bench):
    tasks = bench.plan_tasks(ROOT / "benchmarks" / "forecasting" / "plan.yaml", None, None, None)
    keys = [(t["dataset"], t["model"], t["horizon"]) for t in tasks]
    expected = {(d, m, h) for d, (_, _, horizons) in bench.DATASETS.items()
                for m in bench.MODELS for h in horizons}
    assert len(keys) == len(set(keys)) and set(keys) == expected
    by_key = {(t["dataset"], t["model"], t["horizon"]): t for t in tasks}
    # members per horizon, given once for every horizon, and an input length
    assert by_key["ETTh1", "patch", 96]["members"] == [2]
    assert by_key["ETTh1", "patch", 720]["members"] == [1]
    assert by_key["ETTh2", "patch", 336]["members"] == [3]
    assert by_key["exchange_rate", "patch", 96]["input_lengths"] == [96]
    assert [by_key["exchange_rate", "patch", h]["settings"] for h in (96, 720)] == [
        [], ["revin_affine=false"]]
    assert by_key["ETTh1", "patch", 96]["minutes"] == 9.0
    gelu = ["activation=gelu", "activation_dropout=0.3"]
    assert [by_key["ETTh1", "patch", h]["settings"] for h in (96, 192, 720)] == [
        [], gelu + ["revin_affine=false"], gelu]
    assert [by_key["ETTh1", "patch", h]["input_lengths"] for h in (96, 720)] == [[512], [336]]
    assert by_key["ILI", "linear", 24]["members"] is None
    assert [by_key["ETTh1", "sparse", h]["input_lengths"] for h in (96, 720)] == [[512], [720]]
    assert [by_key["ETTh1", "sparse", h]["settings"] for h in (96, 720)] == [
        ["lr_decay=0.9", "lr_decay_after=3", "revin_affine=false"], []]
    # config settings per horizon: DUET's router at 720, none at 96
    assert by_key["ETTh1", "channel", 720]["settings"] == ["top_k=1", "activation=gelu"]
    assert by_key["ETTh1", "channel", 96]["settings"] == []
    assert [by_key["ETTh1", "channel", h]["members"] for h in (96, 192)] == [[3], [1]]


def test_plan_filters(bench, tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text("ILI:\n  patch: {minutes: 1, members: 2}\n  linear: {minutes: 1}\n"
                    "ETTh1:\n  patch: {minutes: 3}\n")
    tasks = bench.plan_tasks(plan, "ILI", "patch", [24, 60])
    assert [(t["dataset"], t["model"], t["horizon"]) for t in tasks] == [
        ("ILI", "patch", 24), ("ILI", "patch", 60)]
    with pytest.raises(SystemExit, match="has no model transformer"):
        bench.plan_tasks(plan, None, "transformer", None)


def test_plan_settings_reach_their_rows_before_the_command_line(bench, tmp_path,
                                                                 monkeypatch):
    plan = tmp_path / "plan.yaml"
    plan.write_text("ILI:\n  channel: {minutes: 1, settings: {36: {dropout: 0.2, "
                    "num_encoder_layers: 2, mix_channels: false}, 60: {experts: 4}}}\n"
                    "  patch: {minutes: 1, settings: {lr: 0.002}}\n")
    tasks = {(t["model"], t["horizon"]): t for t in bench.plan_tasks(plan, None, None, None)}
    assert tasks["channel", 36]["settings"] == ["dropout=0.2", "num_encoder_layers=2",
                                                "mix_channels=false"]
    assert tasks["channel", 60]["settings"] == ["experts=4"]
    assert tasks["channel", 24]["settings"] == []  # a horizon left out: none
    assert [tasks["patch", h]["settings"] for h in (24, 60)] == [["lr=0.002"]] * 2
    seen = []
    monkeypatch.setattr(bench, "run_one", lambda *args: seen.append(args[5]) or {"mse": 1})
    row = bench.run_task(tasks["channel", 36], tmp_path, ["threads=1", "dropout=0.1"],
                         tmp_path, quiet=False)
    assert seen == [["dropout=0.2", "num_encoder_layers=2", "mix_channels=false",
                     "threads=1", "dropout=0.1"]]  # the command line's last: it wins
    assert row == {"mse": 1, "settings": tasks["channel", 36]["settings"]}
    assert bench.run_task(tasks["channel", 24], tmp_path, [], tmp_path, quiet=True) == \
        {"mse": 1}


@pytest.mark.parametrize("text, message", [
    ("ILI: {patch: {minutes: 1, settings: {drop_out: 0.2}}}", "unknown config key 'drop_out'"),
    ("ILI: {patch: {minutes: 1, settings: {dropout: high}}}", "dropout"),
    ("ILI: {patch: {minutes: 1, settings: [dropout]}}", "settings must map config keys"),
    ("ILI: {patch: {minutes: 1, settings: {24: [1]}}}", "settings for horizon 24 must map"),
    ("ILI: {patch: {minutes: 1, settings: {dropout: [1, 2]}}}", "settings.dropout must be one"),
    ("ILX: {patch: {minutes: 1}}", "unknown dataset 'ILX'"),
    ("ILI: {lstm: {minutes: 1}}", "ILI.lstm: unknown model"),
    ("ILI: {patch: {minutes: 0}}", "minutes must be a positive number, not 0"),
    ("ILI: {patch: {}}", "minutes must be a positive number, not None"),
    ("ILI: {patch: {minutes: 1, members: {24: 2}}}", "members names no value for horizon 36"),
    ("ILI: {patch: {minutes: 1, members: 0}}", "members must be a whole number"),
    ("ILI: {patch: {minutes: 1, input_length: 1.5}}", "input_length must be a whole number"),
    ("ILI: {patch: {minutes: 1, seed: 3}}", "unknown setting 'seed'"),
    ("ILI: [1", "not valid YAML"),
])
def test_bad_plan_is_named(bench, tmp_path, text, message):
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    with pytest.raises(SystemExit, match=message) as error:
        bench.plan_tasks(plan, None, None, None)
    assert str(plan) in str(error.value)


def _row(dataset, model, horizon, mse):
    return {"dataset": dataset, "model": model, "horizon": horizon, "mse": mse}


def test_save_replaces_rows_and_drops_commands_left_without_rows(bench, tmp_path):
    old = {"runs": [{"command": "old", "total_seconds": 60, "rows": 2}],
           "rescored": [{"command": "rescore", "total_seconds": 6, "rows": 2}],
           "results": [_row("ILI", "patch", 24, 2.0), _row("ILI", "patch", 36, 2.0)]}
    (tmp_path / "results.json").write_text(json.dumps(old))
    entry = {"command": "new", "total_seconds": 30, "rows": 1}
    bench.save(tmp_path, [_row("ILI", "patch", 24, 1.0)], entry)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert [c["command"] for c in saved["runs"]] == ["old", "new"]  # "old" still has a row
    assert sorted((r["horizon"], r["mse"]) for r in saved["results"]) == [(24, 1.0), (36, 2.0)]
    entry.update(rows=2, total_seconds=50)  # the same command goes on: one entry, updated
    bench.save(tmp_path, [_row("ILI", "patch", 24, 1.0), _row("ILI", "patch", 36, 1.5)], entry)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["runs"] == [entry] and "rescored" not in saved
    assert sorted((r["horizon"], r["mse"]) for r in saved["results"]) == [(24, 1.0), (36, 1.5)]
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no staging file left


TASK = {"dataset": "ILI", "horizon": 24, "model": "patch", "minutes": 1.0,
        "input_lengths": None, "members": None}


def test_failed_row_keeps_the_commands_error_without_a_traceback(bench, tmp_path, monkeypatch):
    def fails(*args):
        print("forecast train: dropout=2: give a number in [0, 1)")  # what the CLI says
        raise SystemExit("training failed")

    monkeypatch.setattr(bench, "run_one", fails)
    with pytest.raises(SystemExit) as raised:
        bench.run_task(TASK, tmp_path, [], tmp_path, quiet=True)
    log = tmp_path / "ILI_patch_24.out"
    assert str(log) in str(raised.value) and "training failed" in str(raised.value)
    text = log.read_text()
    assert "dropout=2" in text and "Traceback" not in text


def test_unexpected_error_in_a_row_leaves_its_traceback(bench, tmp_path, monkeypatch):
    def breaks(*args):
        raise ValueError("a bug")

    monkeypatch.setattr(bench, "run_one", breaks)
    with pytest.raises(SystemExit, match="ValueError: a bug"):
        bench.run_task(TASK, tmp_path, [], tmp_path, quiet=True)
    text = (tmp_path / "ILI_patch_24.out").read_text()
    assert "Traceback" in text and "breaks" in text


def test_row_output_goes_to_its_file_and_the_row_is_returned(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "run_one", lambda *args: print("epoch 1") or {"mse": 0.5})
    assert bench.run_task(TASK, tmp_path, [], tmp_path, quiet=True) == {"mse": 0.5}
    assert (tmp_path / "ILI_patch_24.out").read_text() == "epoch 1\n"


def test_results_table_rows_means_and_choices(bench):
    report = sys.modules["report"]  # run.py puts its folder on the path and imports it

    def row(model, horizon, mse, **extra):
        return {"dataset": "ILI", "model": model, "horizon": horizon, "mse": mse,
                "mae": mse / 2, "drop_last": {"32": {"mse": mse + 1}}, **extra}

    horizons = [24, 36, 48, 60]
    rows = [row("patch", h, 1.0 + i, members=2 if h == 24 else 1, val_mse_by_members={})
            for i, h in enumerate(horizons)]
    rows += [row("linear", h, 3.0) for h in horizons[:3]]  # one horizon missing: left out
    text = report.table(rows)
    lines = text.splitlines()
    assert lines.count("| model | 24 | 36 | 48 | 60 | mean MSE |") == 2  # both tables
    assert ("| transduce patch | 1.000 / 0.500 | 2.000 / 1.000 | 3.000 / 1.500 | 4.000 / 2.000 "
            "| 2.500 |") in lines
    assert "| transduce patch: ensemble members chosen on validation | 2 | 1 | 1 | 1 | |" in lines
    assert "| transduce patch, B=32 | 2.000 | 3.000 | 4.000 | 5.000 | 3.500 |" in lines
    assert "transduce linear" not in text
    assert "input length chosen" not in text


def test_bag_script_means_each_seeds_blend_and_names_a_missing_one(tmp_path, monkeypatch,
                                                                     capsys):
    from tests.forecasting.test_cli import write_sine
    from transduce.cli.main import main
    from transduce.tasks.forecasting.blend import blend_runs, point_forecasts, truth
    from transduce.tasks.forecasting.rundir import load_run

    bag = _script("bag.py")
    monkeypatch.setitem(bag.DATASETS, "sine", ("sine.csv", "sine", [12]))
    monkeypatch.setitem(bag.REFERENCE_BATCHES, "sine", (8,))
    csv = write_sine(tmp_path / "sine.csv")
    seeds = [tmp_path / "s1", tmp_path / "s2"]
    for seed, folder in enumerate(seeds, 1):
        runs = []
        for length in (24, 48):
            run = folder / f"linear_{length}"
            assert main(["forecast", "train", f"csv={csv}", "horizon=12", "model=linear",
                         f"input_length={length}", "max_epochs=2", "threads=1",
                         f"seed={seed}", "--run-dir", str(run)]) == 0
            runs.append(str(run))
        blend_runs(runs, bag.blend_dir(folder, "sine", ["linear", "linear"], 12), step=0.5)
    argv = ["bag.py", "--dataset", "sine", "--models", "linear,linear", "--runs",
            ",".join(map(str, seeds)), "--out", str(tmp_path / "out")]
    monkeypatch.setattr(sys, "argv", argv)
    bag.main()
    row = json.loads((tmp_path / "out" / "bag_linear+linear.json").read_text())["results"][0]
    blends = [bag.blend_dir(folder, "sine", ["linear", "linear"], 12) for folder in seeds]
    cfg, _, data = load_run(blends[0])
    each = [point_forecasts(load_run(b)[1], data, "test", cfg.input_length) for b in blends]
    mean_mse = float((((each[0] + each[1]) / 2 - truth(data, "test")) ** 2).mean())
    assert row["mse"] == pytest.approx(mean_mse, abs=1e-4)
    assert row["test_mse_each"] == [
        round(json.loads((b / "blend.json").read_text())["test"]["mse"], 4) for b in blends]
    assert "| bag of the 2, test |" in (tmp_path / "out" / "bag_linear+linear.md").read_text()
    # a seed without its blend: named, and nothing written
    monkeypatch.setattr(sys, "argv", [*argv[:5], "--runs", f"{seeds[0]},{tmp_path / 's3'}",
                                      "--out", str(tmp_path / "out2")])
    with pytest.raises(SystemExit, match="s3/blend/sine_linear\\+linear_12: no blend there"):
        bag.main()
    assert not (tmp_path / "out2").exists()


@pytest.fixture(scope="module")
def merge():
    return _script("merge.py")


def _results(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(
        {"runs": [{"command": f"run.py --out {folder.name}"}], "results": rows}))
    return folder


def test_merge_puts_later_rows_in_place_of_earlier_ones(merge, tmp_path):
    row = {"dataset": "ETTh1", "model": "patch", "horizon": 96, "run": "a/p96", "val_mse": 1.0}
    old = _results(tmp_path / "old", [row, {**row, "model": "linear", "run": "a/l96"},
                                      {**row, "horizon": 720, "run": "a/p720"}])
    new = _results(tmp_path / "new", [{**row, "run": "b/p96", "val_mse": 0.5}])
    saved = merge.merged([old, new])
    by_key = {(r["model"], r["horizon"]): r["run"] for r in saved["results"]}
    assert by_key == {("patch", 96): "b/p96", ("linear", 96): "a/l96", ("patch", 720): "a/p720"}
    assert len(saved["results"]) == 3
    assert [r["from"] for r in saved["runs"]] == [str(old), str(new)]
    # only the horizons asked for come from the later folders
    new720 = _results(tmp_path / "new720", [{**row, "run": "c/p96"},
                                            {**row, "horizon": 720, "run": "c/p720"}])
    assert {r["run"] for r in merge.merged([old, new720], [720])["results"]} == {
        "a/p96", "a/l96", "c/p720"}
    # the other order keeps the old row
    assert {r["run"] for r in merge.merged([new, old])["results"]} == {"a/p96", "a/l96",
                                                                       "a/p720"}


def test_merge_refuses_rows_without_a_run_and_missing_folders(merge, tmp_path, monkeypatch):
    row = {"dataset": "ILI", "model": "patch", "horizon": 24}
    bare = _results(tmp_path / "bare", [row])
    with pytest.raises(SystemExit, match=r"bare/results.json: the row ILI patch 24 names no run"):
        merge.merged([bare])
    with pytest.raises(SystemExit, match="nowhere: no results.json"):
        merge.merged([tmp_path / "nowhere"])
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["merge.py", "--out", str(out), str(bare)])
    with pytest.raises(SystemExit):
        merge.main()
    assert not out.exists()  # nothing written
