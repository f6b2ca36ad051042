"""Processes and devices the tests start or make: a training stopped by SIGTERM, a device node."""

import os
import signal
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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
    import time

    process = subprocess.Popen(
        list(map(str, command)),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    deadline = time.time() + 180
    while not (run_dir / "metrics.jsonl").exists() and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    err = process.communicate(timeout=120)[1]
    return process.returncode, err
