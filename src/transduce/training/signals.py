"""Stopping a run cleanly: SIGINT (Ctrl-C) and SIGTERM (`kill`, job schedulers, torchrun
passing on either) are noted while training rather than ending the process, so the engine
can finish the update in progress, save it and then stop."""

from __future__ import annotations

import signal
import threading


class Interrupted(KeyboardInterrupt):
    """Training stopped on SIGINT or SIGTERM after saving its state; the command line exits
    with 128 + ``signum``, as a shell reports a process that signal ended."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class Handlers:
    """While entered, SIGINT and SIGTERM call :meth:`handle` instead of what they did;
    leaving gives the handlers back. Only the main thread can take signals; elsewhere the
    handlers stay as they are."""

    KINDS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.before: dict = {}

    def handle(self, signum, frame) -> None:
        raise NotImplementedError

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.before = {kind: signal.getsignal(kind) for kind in self.KINDS}
            for kind in self.KINDS:
                signal.signal(kind, self.handle)
        return self

    def __exit__(self, *exc) -> None:
        for kind, handler in self.before.items():
            signal.signal(kind, handler)
        self.before = {}


class StopSignals(Handlers):
    """While entered, SIGINT and SIGTERM set :attr:`signum` (the first to arrive) instead of
    stopping the process. After the first signal a second Ctrl-C stops at once, as it did
    before, while SIGTERM stays noted only: torchrun sends its workers SIGTERM after a
    Ctrl-C, and waits for them."""

    def __init__(self) -> None:
        super().__init__()
        self.signum = 0

    def handle(self, signum, frame) -> None:  # no logging: the signal may land in a write
        self.signum = self.signum or signum
        signal.signal(signal.SIGINT, self.before[signal.SIGINT])
