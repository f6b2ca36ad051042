"""Two processes on the CPU (gloo), started by PyTorch's own launcher (torch.distributed.run,
the module behind torchrun), train as one process on the union of their batches."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers.forecasting import SINE_YAML as FORECAST_TINY
from tests.helpers.forecasting import write_sine
from tests.helpers.processes import wait_for
from transduce.cli.main import main
from transduce.runs import load_checkpoint, step_checkpoints

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    not torch.distributed.is_available(), reason="this PyTorch build has no torch.distributed"
)


def torchrun(*args, processes=2, module="transduce"):
    """The command line of ``torchrun --nproc_per_node=N -m transduce ARGS`` on the CPU (one
    thread per process: two processes share this machine's two cores). device=cpu: on a
    machine with one GPU, device=auto would give the second process a cuda:1 that is not
    there."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={processes}",
        "-m",
        module,
        *map(str, args),
        "threads=1",
        "device=cpu",
    ]


@pytest.fixture(autouse=True)
def _launcher_scratch(tmp_path, monkeypatch):
    """torchrun writes its scratch folders to TMPDIR: keep them in the test's folder."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))


def run(command, timeout=240):
    # a process that dies of a signal prints where each of its threads was (faulthandler)
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def assert_close(a, b, atol):
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=atol, msg=key)


@pytest.mark.parametrize("segmentation", ["bpe_dropout=0", "bpe_dropout=0.1"])
def test_two_processes_make_the_update_of_one_on_both_batches(config, tmp_path, segmentation):
    # dropout off: the two processes draw other masks than one process would; BPE-dropout
    # on: every process must draw the segmentation that one process draws
    settings = [
        "dropout=0",
        "max_steps=1",
        "valid_every=1",
        "valid_bleu_sentences=2",
        "precision=fp32",
        "device=cpu",
        segmentation,
    ]
    run(torchrun("train", config, *settings, "--run-dir", tmp_path / "two"))
    assert (
        main(["train", str(config), *settings, "accumulate=2", "--run-dir", str(tmp_path / "one")])
        == 0
    )
    two = load_checkpoint(tmp_path / "two/checkpoints/step_1.pt")
    one = load_checkpoint(tmp_path / "one/checkpoints/step_1.pt")
    assert len(two["rng"]) == 2 and len(one["rng"]) == 1  # a stream per process
    assert two["step"] == one["step"] == 1 and two["position"] == one["position"] == 2
    assert_close(two["model"], one["model"], atol=1e-6)


def test_a_killed_two_process_run_resumes_to_the_same_weights(config, tmp_path):
    settings = ["max_steps=16", "precision=fp32"]
    run(torchrun("train", config, *settings, "--run-dir", tmp_path / "whole"))
    killed = tmp_path / "killed"
    process = subprocess.Popen(
        torchrun("train", config, *settings, "--run-dir", killed),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    wait_for(killed / "checkpoints" / "step_8.pt", process, 180)
    os.killpg(process.pid, signal.SIGKILL)  # the launcher and both workers, mid-whatever
    process.wait()
    assert not (killed / "checkpoints" / "step_16.pt").exists()
    run(torchrun("train", "--run-dir", killed))  # resumes from the run's own config.yaml
    assert_close(
        load_checkpoint(tmp_path / "whole/checkpoints/step_16.pt")["model"],
        load_checkpoint(killed / "checkpoints/step_16.pt")["model"],
        atol=0,
    )


def test_a_two_process_run_stopped_by_sigterm_saves_and_resumes(config, tmp_path):
    """As a scheduler stops a job: SIGTERM to torchrun, which passes it to its workers. Both
    finish the same update, save it, and exit; the run then resumes from that step."""
    from tests.helpers.processes import stopped_by_sigterm

    run_dir = tmp_path / "stopped"
    status, err = stopped_by_sigterm(
        torchrun(
            "train",
            config,
            "max_steps=100000",
            "valid_every=1000",
            "log_every=1",
            "precision=fp32",
            "--run-dir",
            run_dir,
        ),
        run_dir,
    )
    assert status != 0
    saved = step_checkpoints(run_dir)
    assert len(saved) == 1, err[-3000:]
    state = load_checkpoint(saved[0])
    assert len(state["rng"]) == 2 and 0 < state["step"] < 1000  # both processes, mid-run
    assert f"saved {saved[0]}; run the same command to resume" in err
    run(torchrun("train", "--run-dir", run_dir, f"max_steps={state['step'] + 2}"))
    assert step_checkpoints(run_dir)[-1].name == f"step_{state['step'] + 2}.pt"


def test_two_process_forecasting_trains_and_resumes(tmp_path):
    csv = write_sine(tmp_path / "sine.csv")
    config = tmp_path / "tiny.yaml"
    config.write_text(FORECAST_TINY.format(csv=csv), encoding="utf-8")
    common = ["model=transformer", "dropout=0.1"]
    run(torchrun("forecast", "train", config, *common, "--run-dir", tmp_path / "whole"))
    run(
        torchrun(
            "forecast", "train", config, *common, "max_epochs=2", "--run-dir", tmp_path / "split"
        )
    )
    run(torchrun("forecast", "train", config, *common, "--run-dir", tmp_path / "split"))
    a = load_checkpoint(step_checkpoints(tmp_path / "whole")[-1])
    b = load_checkpoint(step_checkpoints(tmp_path / "split")[-1])
    assert a["epoch"] == b["epoch"] == 4 and len(b["rng"]) == 2
    assert_close(a["model"], b["model"], atol=0)


def test_the_ddp_wrapper_is_gone_before_the_process_group(tmp_path):
    """DistributedDataParallel holds the process group, and the engine that holds it goes
    back to the caller: the group outlived its destruction, the suspected cause of a rare
    abort at exit of a process that had trained and saved (SIGABRT, 'terminate called
    without an active exception', now and then under load). Each process must free the
    wrapper before the group is destroyed."""
    csv = write_sine(tmp_path / "sine.csv")
    config = tmp_path / "tiny.yaml"
    config.write_text(FORECAST_TINY.format(csv=csv), encoding="utf-8")
    result = run(
        torchrun(
            "forecast",
            "train",
            config,
            "model=transformer",
            "max_epochs=1",
            "--run-dir",
            tmp_path / "run",
            module="tests.training.teardown",
        )
    )
    assert result.stdout.count("DistributedDataParallel alive at teardown: [0]") == 2, result.stdout


def test_a_launched_process_ends_without_python_teardown_yet_logs_everything(tmp_path):
    """gloo's threads could abort a worker as Python tore itself down after the run had
    saved (SIGABRT, 'terminate called without an active exception'): a worker ends at once
    (os._exit) once its group is destroyed, its log flushed and closed."""
    csv = write_sine(tmp_path / "sine.csv")
    config = tmp_path / "tiny.yaml"
    config.write_text(FORECAST_TINY.format(csv=csv), encoding="utf-8")
    command = ["forecast", "train", config, "model=transformer", "max_epochs=1"]
    result = run(torchrun(*command, "--run-dir", tmp_path / "run", module="tests.training.exits"))
    assert "Python's teardown ran" not in result.stdout
    log = (tmp_path / "run/train.log").read_text(encoding="utf-8").splitlines()
    assert log[-1].endswith(": reached max_epochs=1")
    alone = subprocess.run(  # one process, no launcher: Python ends as it always does
        [sys.executable, "-m", "tests.training.exits", *map(str, command), "threads=1"]
        + ["--run-dir", str(tmp_path / "alone")],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert "Python's teardown ran" in alone.stdout
