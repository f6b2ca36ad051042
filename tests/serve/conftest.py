import contextlib
import socket
import subprocess
import sys
import time
import urllib.request

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(run, *args):
    """A real `transduce serve RUN` on 127.0.0.1; yields its URL once /health answers."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "transduce", "serve", str(run), "--port",
                                str(port), *args], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(url + "health", timeout=1)
                break
            except OSError:
                if process.poll() is not None or time.time() > deadline:
                    pytest.fail(f"transduce serve did not start: {process.stdout.read()}")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)
