"""The run directory: its layout, its checkpoint record, and the one way to load what it holds.

::

    RUN/
      config.yaml      resolved settings, data paths absolute (``train --run-dir RUN`` resumes)
      spm.model        (translation) the tokenizer the checkpoints are tied to by fingerprint
      checkpoints/     step_N.pt (the newest ``keep_last``), best.pt (best validation metric)
      averaged.pt      after ``transduce average``
      decoding.json    after ``transduce tune`` (see transduce.decoding.defaults)
      train.log, metrics.jsonl, tensorboard/
      .lock            held by the one process training the run (the kernel frees it on exit)

An ensemble directory (``transduce tune RUN RUN … --output DIR``) holds only ``ensemble.json``
(its member runs, relative to it) and the ensemble's ``decoding.json``.

Nothing else reads or writes these files by name: training, translation, export, averaging
and forecasting all come through here, as ``transduce.runs.NAME``. The package's modules:
``checkpoints`` (the record, step checkpoints, ensembles, averaging), ``state`` (the lock,
the settings a run started with, its metrics). Building a model from what a run holds is
its task's business (``transduce.tasks.translation.loading``).
"""

from transduce.runs.checkpoints import (AVERAGED, BEST, CHECKPOINTS, CONFIG, ENSEMBLE, KINDS, LOCK,
                                        METRICS, STEP_FILE, TOKENIZER, DamagedCheckpoint,
                                        average_checkpoints, average_run, build_model,
                                        checkpoint_dir, checkpoint_kind, ensemble_members,
                                        find_checkpoint, load_checkpoint, prune, record,
                                        save_checkpoint, step_checkpoints, step_path,
                                        write_ensemble)
from transduce.runs.state import (_holder, append_metrics, check_config, lock, read_config,
                                  started_config, truncate_metrics, write_config)

__all__ = [
    "AVERAGED", "BEST", "CHECKPOINTS", "CONFIG", "ENSEMBLE", "KINDS", "LOCK", "METRICS",
    "STEP_FILE", "TOKENIZER", "DamagedCheckpoint", "_holder", "append_metrics",
    "average_checkpoints", "average_run", "build_model", "check_config", "checkpoint_dir",
    "checkpoint_kind", "ensemble_members", "find_checkpoint", "load_checkpoint", "lock", "prune", "read_config", "record", "save_checkpoint",
    "started_config", "step_checkpoints", "step_path", "truncate_metrics", "write_config",
    "write_ensemble",
]
