"""Fault injection: a run SIGKILLed at many points (inside SentencePiece training, half-way
through checkpoint and metrics writes, between best.pt and step_N.pt, between updates)
and resumed each time ends exactly where an uninterrupted run does, with nothing stray."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import torch

from tests.helpers.processes import stopped_by_sigterm
from transduce.cli.main import main
from transduce.runs import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ["max_steps=12", "valid_every=4", "precision=fp32", "log_every=2"]
# (point, n): the n-th arrival at the point in that attempt (see tests/training/killer.py)
KILLS = [
    ("spm", 1),
    ("update", 3),
    ("save", 1),
    ("checkpoint", 1),
    ("metrics", 2),
    ("save", 2),
    ("update", 2),
    ("checkpoint", 2),
    ("metrics", 1),
    ("update", 3),
]


def attempt(config, run_dir, point, n):
    command = [
        sys.executable,
        "-m",
        "tests.training.killer",
        point,
        str(n),
        "train",
        str(config),
        *SETTINGS,
        "--run-dir",
        str(run_dir),
    ]
    # a kill inside SentencePiece training leaves its scratch folder in TMPDIR: the test's own
    scratch = run_dir.parent / "tmp"
    scratch.mkdir(exist_ok=True)
    return subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(scratch)},
    )


def validation_rows(run_dir):
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in ("elapsed_s", "tokens_per_s")} for r in rows]


def test_a_run_killed_again_and_again_ends_as_an_uninterrupted_one(config, tmp_path):
    whole = tmp_path / "whole"
    assert main(["train", str(config), *SETTINGS, "--run-dir", str(whole)]) == 0
    killed = tmp_path / "killed"
    for point, n in KILLS:
        result = attempt(config, killed, point, n)
        assert result.returncode == -signal.SIGKILL, (point, n, result.stderr[-2000:])
    assert not (killed / "checkpoints" / "step_12.pt").exists()
    assert main(["train", str(config), *SETTINGS, "--run-dir", str(killed)]) == 0

    final, expected = (load_checkpoint(r / "checkpoints" / "step_12.pt") for r in (killed, whole))
    for key in expected["model"]:
        torch.testing.assert_close(final["model"][key], expected["model"][key], rtol=0, atol=0)
    best, expected_best = (load_checkpoint(r / "checkpoints" / "best.pt") for r in (killed, whole))
    assert best["step"] == expected_best["step"]
    assert validation_rows(killed) == validation_rows(whole)  # none lost, none repeated

    def files(run):
        return sorted(
            str(p.relative_to(run))
            for p in run.rglob("*")
            if p.is_file() and "tensorboard" not in p.parts
        )

    assert files(killed) == files(whole)  # nothing stray: no staging file or folder


def test_sigterm_saves_the_run_and_exits_as_the_signal_would(config, tmp_path):
    run_dir = tmp_path / "run"
    status, err = stopped_by_sigterm(
        [
            sys.executable,
            "-m",
            "transduce",
            "train",
            config,
            "max_steps=100000",
            "valid_every=1000",
            "log_every=1",
            "--run-dir",
            run_dir,
        ],
        run_dir,
    )
    assert status == 128 + signal.SIGTERM, err[-2000:]  # 143, as a shell says
    saved = sorted((run_dir / "checkpoints").glob("step_*.pt"))
    assert len(saved) == 1 and f"saved {saved[0]}; run the same command to resume" in err
    assert err.rstrip().endswith("transduce: interrupted")
