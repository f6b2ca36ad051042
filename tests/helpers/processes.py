"""Processes and devices the tests start or make: a training stopped by SIGTERM, a device node."""

import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def wait_for(path: Path, process: subprocess.Popen, seconds: float) -> None:
    """Wait until ``path`` exists; fail the test if ``process`` ends first or ``seconds``
    pass, so that a test that acts once a run has reached a point never acts before it."""
    deadline = time.time() + seconds
    while not path.exists():
        if process.poll() is not None:
            pytest.fail(f"the process ended (exit {process.returncode}) before {path} appeared")
        if time.time() > deadline:
            process.kill()
            pytest.fail(f"{path} did not appear within {seconds:g} s")
        time.sleep(0.05)


def make_node(path, minor):
    """A character device like /dev/null (minor 3) or /dev/full (7), made in the test's own
    folder, never the machine's /dev; skips where this process may not make device nodes."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except PermissionError:
        pytest.skip("making a device node needs root (CAP_MKNOD)")
    return path


def stopped_by_sigterm(command, run_dir):
    """Run ``command`` (a training of ``run_dir``), send it SIGTERM once training has begun
    (its first metrics row), as a scheduler stops a job; returns (exit status, stderr)."""
    process = subprocess.Popen(
        list(map(str, command)),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    wait_for(run_dir / "metrics.jsonl", process, 180)
    process.send_signal(signal.SIGTERM)
    err = process.communicate(timeout=120)[1]
    return process.returncode, err
