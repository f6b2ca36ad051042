"""``python -m tests.training.killer POINT N transduce-args...``: run the transduce command
line and SIGKILL the process at the N-th arrival at POINT, for fault-injection tests.

Points: ``spm`` (SentencePiece has trained, its files still in their scratch folder),
``save`` (half-way through writing a checkpoint file), ``checkpoint`` (a checkpoint file
was just written: between best.pt and step_N.pt, or after step_N.pt), ``update`` (an
optimiser step finished), ``metrics`` (half-way through appending a metrics row).
"""

import os
import signal
import sys


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def arm(point: str, n: int) -> None:
    count = [0]

    def reached() -> bool:
        count[0] += 1
        return count[0] == n

    def after(owner, name):  # die once the wrapped call has finished
        original = getattr(owner, name)

        def wrapped(*args, **kwargs):
            result = original(*args, **kwargs)
            if reached():
                die()
            return result

        setattr(owner, name, wrapped)

    if point == "spm":
        import sentencepiece

        after(sentencepiece.SentencePieceTrainer, "train")
    elif point == "save":
        import torch

        original = torch.save

        def half_save(obj, path, *args, **kwargs):
            original(obj, path, *args, **kwargs)
            if reached():
                with open(path, "r+b") as f:
                    f.truncate(os.path.getsize(path) // 2)
                die()

        torch.save = half_save
    elif point == "checkpoint":
        from transduce import runs

        after(runs, "save_checkpoint")
    elif point == "update":
        from transduce.training.engine import Engine

        after(Engine, "update")
    elif point == "metrics":
        import json

        from transduce import runs

        def torn_row(run_dir, row):
            if reached():
                with open(os.path.join(run_dir, runs.METRICS), "a", encoding="utf-8") as f:
                    f.write(json.dumps(row)[:20])
                die()
            original(run_dir, row)

        original = runs.append_metrics
        runs.append_metrics = torn_row
    else:
        raise SystemExit(f"unknown point {point!r}")


if __name__ == "__main__":
    arm(sys.argv[1], int(sys.argv[2]))
    from transduce.cli.main import main

    sys.exit(main(sys.argv[3:]))
