"""Bad arguments, files and pipes of the commands that use a model: one line, no traceback,
non-zero exit, no output written."""

import subprocess
import sys

import pytest
import torch

from transduce.cli.main import main


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err and "Traceback" not in "\n".join(err)
    return err[-1]


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("five\nsix hundred\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def export(trained_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "ct2"
    assert main(["export", str(trained_run), str(out)]) == 0
    return out


@pytest.mark.parametrize("engine", ["transduce", "ctranslate2"])
@pytest.mark.parametrize(
    "args, message",
    [
        (["--threads", "-1"], "--threads must be 0 (all cores) or more, not -1"),
        (["--lenpen", "nan"], "--lenpen must be a number of at least 0 such as 0.6, not nan"),
        (["--device", "foo"], "foo"),
        (["--max-tokens", "0"], "--max-tokens must be at least 1"),
        (["--no-repeat-ngram", "-1"], "--no-repeat-ngram must be 0 (off) or more"),
    ],
)
def test_translate_refuses_bad_values_before_translating(
    trained_run, request, source, tmp_path, capsys, engine, args, message
):
    # the export only for its engine: without CTranslate2 the transduce cases still run
    model = request.getfixturevalue("export") if engine == "ctranslate2" else trained_run
    out = tmp_path / "out.txt"
    code = main(
        [
            "translate",
            str(model),
            "--engine",
            engine,
            "--input",
            str(source),
            "--output",
            str(out),
            *args,
        ]
    )
    assert code == 2 and message in one_line(capsys)
    assert not out.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is visible here")
@pytest.mark.parametrize("engine", ["transduce", "ctranslate2"])
def test_translate_on_a_missing_gpu_is_one_line(trained_run, request, source, capsys, engine):
    model = request.getfixturevalue("export") if engine == "ctranslate2" else trained_run
    code = main(
        ["translate", str(model), "--engine", engine, "--input", str(source), "--device", "cuda"]
    )
    line = one_line(capsys)
    assert code == 2 and "cuda" in line and "GPU" in line


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is visible here")
def test_training_on_a_missing_gpu_is_one_line(config, tmp_path, capsys):
    assert main(["train", str(config), "device=cuda", "--run-dir", str(tmp_path / "r")]) == 2
    assert "no CUDA GPU is visible here" in one_line(capsys)
    assert not (tmp_path / "r").exists()


def test_output_that_is_a_folder_is_refused_before_translating(
    trained_run, source, tmp_path, capsys, monkeypatch
):
    calls = []
    monkeypatch.setattr("transduce.cli.translate.load", lambda *a, **k: calls.append(a))
    assert (
        main(["translate", str(trained_run), "--input", str(source), "--output", str(tmp_path)])
        == 2
    )
    assert "is a folder; give --output a file name" in one_line(capsys)
    assert not calls  # refused before the model was even loaded


def test_export_under_a_file_is_one_line(trained_run, tmp_path, capsys):
    (tmp_path / "file").write_text("mine")
    assert main(["export", str(trained_run), str(tmp_path / "file" / "ct2")]) == 2
    assert "is a file where OUT_DIR needs a folder" in one_line(capsys)  # its usage's name


def test_a_killed_export_leaves_no_staging_behind(trained_run, tmp_path):
    stale = tmp_path / ".ct2.k1l2e3d4.tmp"
    stale.mkdir()
    (stale / "model.bin").write_bytes(b"half")
    assert main(["export", str(trained_run), str(tmp_path / "ct2")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ct2"]


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda d: (d / "model.bin").write_bytes((d / "model.bin").read_bytes()[:1000]),
            "model.bin: CTranslate2 cannot load it",
        ),
        (lambda d: (d / "transduce.json").write_text("{not json"), "transduce.json: damaged"),
        (lambda d: (d / "transduce.json").write_text("{}"), "transduce.json: damaged"),
    ],
)
def test_a_damaged_export_is_one_line(export, source, tmp_path, capsys, damage, message):
    import shutil

    copy = tmp_path / "ct2"
    shutil.copytree(export, copy)
    damage(copy)
    assert main(["translate", str(copy), "--engine", "ctranslate2", "--input", str(source)]) == 2
    assert message in one_line(capsys)


def test_multi30k_dest_that_is_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("mine")
    assert (
        main(["data", "multi30k", "--dest", str(tmp_path / "file"), "--from", str(tmp_path)]) == 2
    )
    assert "is a file where --dest needs a folder" in one_line(capsys)


def closed_pipe(*args, stdin=None):
    """Run transduce with its standard output a pipe whose reader has already gone."""
    process = subprocess.Popen(
        [sys.executable, "-m", "transduce", *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # before the child has written a byte: every write fails
    _, err = process.communicate(stdin, timeout=120)
    return process.returncode, err.decode()


def test_a_closed_pipe_ends_quietly(trained_run, forecast_run, source):
    run, csv = forecast_run
    for args in (
        ["translate", trained_run, "--input", source, "--beam", "1"],
        ["evaluate", "--hyp", source, "--ref", source],
        ["forecast", "predict", run, "--csv", csv],
    ):
        code, err = closed_pipe(*args)
        assert code == 141, (args, err)
        assert "Traceback" not in err and "BrokenPipe" not in err and "Exception" not in err
