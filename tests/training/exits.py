"""``python -m tests.training.exits transduce-args...`` (under torchrun): the `transduce`
console script (:func:`transduce.cli.main.entry`), with an exit handler that prints a line
if Python's teardown runs."""

import atexit

from transduce.cli.main import entry

if __name__ == "__main__":
    atexit.register(lambda: print("Python's teardown ran", flush=True))
    entry()
