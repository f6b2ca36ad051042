"""An ensemble of runs from the command line and the Python API: `transduce tune RUN RUN --out
DIR` chooses its decoding on val; translate, serve and `transduce.load` take DIR."""

import json
import shutil

import pytest
from fastapi.testclient import TestClient

import transduce
from transduce import runs
from transduce.api.describe import describe
from transduce.cli.main import main
from transduce.errors import UserError
from transduce.serve.app import create_app

GRID = ["--last", "2", "--lenpen", "0.6", "1.2", "--no-repeat-ngram", "0", "--beam", "2"]


@pytest.fixture(scope="module")
def two_runs(trained_run, tmp_path_factory):
    """(a copy of the shared run, a second run of another seed on the same data)."""
    root = tmp_path_factory.mktemp("ensemble")
    first = root / "first"
    shutil.copytree(trained_run, first)  # tune writes into its runs
    config = trained_run.parent / "tiny.yaml"
    assert main(["train", str(config), "seed=4", "--run-dir", str(root / "second")]) == 0
    return first, root / "second"


@pytest.fixture(scope="module")
def ensemble(two_runs):
    out = two_runs[0].parent / "ens"
    assert main(["tune", *map(str, two_runs), "--out", str(out), *GRID]) == 0
    return out


def test_tune_writes_the_members_and_the_choice_made_on_val(ensemble, two_runs, capsys):
    recorded = json.loads((ensemble / "ensemble.json").read_text(encoding="utf-8"))
    assert recorded["members"] == ["../first", "../second"]  # relative: they move together
    chosen = json.loads((ensemble / "decoding.json").read_text(encoding="utf-8"))
    assert len(chosen["grid"]) == 2 and chosen["lenpen"] in (0.6, 1.2)
    assert chosen["no_repeat_ngram"] == 0 and chosen["beam"] == 2
    for run in two_runs:  # each member was tuned alone first
        assert (run / "averaged.pt").is_file() and (run / "decoding.json").is_file()


def test_a_member_tuned_at_its_newest_checkpoint_is_not_tuned_again(
    ensemble, two_runs, tmp_path, caplog
):
    stamps = [(r / "averaged.pt").stat().st_mtime_ns for r in two_runs]
    caplog.clear()
    assert main(["tune", *map(str, two_runs), "--out", str(tmp_path / "again"), *GRID]) == 0
    assert [(r / "averaged.pt").stat().st_mtime_ns for r in two_runs] == stamps
    assert caplog.text.count("using the average its decoding.json names") == 2
    first, again = (
        json.loads((d / "decoding.json").read_text(encoding="utf-8"))["grid"]
        for d in (ensemble, tmp_path / "again")
    )
    assert [r["bleu"] for r in again] == [r["bleu"] for r in first]  # the same averages


def test_an_ensemble_tuning_that_dies_resumes_from_the_settings_it_scored(
    ensemble, two_runs, tmp_path, monkeypatch, caplog
):
    import transduce.tasks.translation.tune as tuning

    out, score, calls = tmp_path / "resumed", tuning._score, []

    def dies_second(*args):
        calls.append(args[5])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return score(*args)

    monkeypatch.setattr(tuning, "_score", dies_second)  # the members are tuned already
    assert main(["tune", *map(str, two_runs), "--out", str(out), *GRID]) == 130
    assert len((out / runs.TUNE_PARTIAL).read_text().splitlines()) == 1
    calls.clear()
    monkeypatch.setattr(tuning, "_score", lambda *a: calls.append(a[5]) or score(*a))
    assert main(["tune", *map(str, two_runs), "--out", str(out), *GRID]) == 0
    assert calls == [1.2] and "resuming, 1 of 2 settings already scored" in caplog.text
    first, resumed = (
        [r["bleu"] for r in json.loads((d / "decoding.json").read_text())["grid"]]
        for d in (ensemble, out)
    )
    assert resumed == first and not (out / runs.TUNE_PARTIAL).exists()


def test_the_ensemble_directory_translates_as_the_listed_runs(ensemble, two_runs, tmp_path):
    model = transduce.load(ensemble, verbose=False)
    assert str(ensemble / "decoding.json") in model.decoding.source  # not a member's
    assert (
        model.decoding.lenpen
        == json.loads((ensemble / "decoding.json").read_text(encoding="utf-8"))["lenpen"]
    )
    lines = ["five hundred", "", "seven thousand two"]
    listed = transduce.load(list(two_runs), verbose=False)
    assert model.translate(lines, beam=2, lenpen=0.6) == listed.translate(lines, beam=2, lenpen=0.6)
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert (
        main(
            [
                "translate",
                str(ensemble),
                "--input",
                str(source),
                "--output",
                str(out),
                "--beam",
                "2",
                "--lenpen",
                "0.6",
            ]
        )
        == 0
    )
    assert out.read_text(encoding="utf-8").split("\n")[:3] == listed.translate(
        lines, beam=2, lenpen=0.6
    )
    with pytest.raises(UserError, match="not of an ensemble"):
        model.attention("five")


def test_the_server_translates_with_an_ensemble_and_refuses_its_attention(ensemble):
    model = transduce.load(ensemble, verbose=False)
    info = describe(str(ensemble), model)
    assert info["kind"] == "translation" and len(info["ensemble"]) == 2
    with TestClient(create_app(model, info)) as client:
        got = client.post("/translate", json={"sentences": ["five"], "beam": 2}).json()
        assert got["translations"] == [model.translate("five", beam=2)]
        assert got["attention"] is False
        refused = client.post("/attention", json={"sentence": "five"})
        assert refused.status_code == 422 and "ensemble" in refused.json()["error"]
        assert client.get("/health").json() == {"status": "ok"}


def test_runs_of_another_vocabulary_are_refused_before_anything_is_written(
    two_runs, tmp_path, capsys
):
    other = tmp_path / "other"
    config = two_runs[0] / "config.yaml"
    assert (
        main(["train", str(config), "vocab_size=90", "max_steps=2", "--run-dir", str(other)]) == 0
    )
    capsys.readouterr()
    out = tmp_path / "ens"
    assert main(["tune", str(two_runs[0]), str(other), "--out", str(out), *GRID]) == 2
    error = capsys.readouterr().err.strip()
    assert f"{other}: its vocabulary differs" in error and len(error.splitlines()) == 1
    assert not out.exists() and not (other / "averaged.pt").exists()  # not tuned either
    with pytest.raises(UserError, match="its vocabulary differs"):
        transduce.load([two_runs[0], other], verbose=False)


def test_commands_for_one_model_name_the_ensemble(ensemble, tmp_path, capsys):
    assert main(["export", str(ensemble), str(tmp_path / "ct2")]) == 2
    error = capsys.readouterr().err.strip()
    assert "an ensemble of several runs" in error and len(error.splitlines()) == 1
    assert not (tmp_path / "ct2").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["A", "B"], "give --output DIR"),
        (["A", "--out", "ens"], "give two or more run directories"),
        (["A", "A", "--out", "A"], "give a directory of its own"),
    ],
)
def test_bad_ensemble_arguments(two_runs, tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    names = {"A": str(two_runs[0]), "B": str(two_runs[1])}
    assert main(["tune", *[names.get(a, a) for a in args]]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("command", [["average", "--last", "2"], ["tune", "--last", "1"]])
def test_a_run_in_use_is_not_averaged_or_tuned_into(trained_run, tmp_path, capsys, command):
    """While another process holds the run (a training, a tune), averaged.pt and
    decoding.json written into it would be stale at once, and two tunes would share
    tune.partial.jsonl: refused, naming the holder. Averaging to a file outside the run
    only reads it, and stays possible."""
    from transduce.runs import lock

    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    before = sorted(p.name for p in run.rglob("*"))
    with lock(run):
        assert main([command[0], str(run), *command[1:]]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{run}: in use by process " in err[0], err
        assert sorted(p.name for p in run.rglob("*")) == before
        if command[0] == "average":
            assert (
                main(["average", str(run), "--last", "2", "--output", str(tmp_path / "a.pt")]) == 0
            )
