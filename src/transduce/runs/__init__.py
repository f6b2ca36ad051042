"""The run directory: its files (``layout``, where each is named and listed), its checkpoint
record, its lock, its settings and metrics.

Nothing else spells a run file's name: training, translation, export, averaging and
forecasting all come through here, as ``transduce.runs.NAME``. The package's modules:
``layout`` (the names, atomic JSON records), ``checkpoints`` (the record, step checkpoints,
ensembles, averaging), ``state`` (the lock, the settings a run started with, its metrics and
scores). Building a model from what a run holds is its task's business
(``transduce.tasks.translation.loading``, ``transduce.tasks.forecasting.rundir``).
"""

from transduce.runs.checkpoints import (KINDS, STEP_FILE, DamagedCheckpoint, average_checkpoints,
                                        average_run, build_model, checkpoint_dir, checkpoint_kind,
                                        ensemble_members, find_checkpoint, load_checkpoint, prune,
                                        record, save_checkpoint, step_checkpoints, step_path,
                                        write_ensemble)
from transduce.runs.layout import (AVERAGED, BACKTEST, BACKTEST_PLOT, BEST, BLEND, CALIBRATION,
                                   CHECKPOINTS, CONFIG, CROSS_ATTENTION_PLOT, DECODING, ENSEMBLE,
                                   LOCK, METRICS, POSITIONS_PLOT, TENSORBOARD, TEST_RESULTS,
                                   TOKENIZER, TRAIN_LOG, TRANSLATIONS, TUNE_PARTIAL, fold_dir,
                                   fold_log, forecast_plot, write_json)
from transduce.runs.state import (_holder, append_metrics, check_config, lock, read_config, scores,
                                  started_config, truncate_metrics, write_config)

__all__ = [
    "KINDS", "STEP_FILE", "DamagedCheckpoint", "average_checkpoints", "average_run",
    "build_model", "checkpoint_dir", "checkpoint_kind", "ensemble_members", "find_checkpoint",
    "load_checkpoint", "prune", "record", "save_checkpoint", "step_checkpoints", "step_path",
    "write_ensemble", "AVERAGED", "BACKTEST", "BACKTEST_PLOT", "BEST", "BLEND", "CALIBRATION",
    "CHECKPOINTS", "CONFIG", "CROSS_ATTENTION_PLOT", "DECODING", "ENSEMBLE", "LOCK", "METRICS",
    "POSITIONS_PLOT", "TENSORBOARD", "TEST_RESULTS", "TOKENIZER", "TRAIN_LOG", "TRANSLATIONS",
    "TUNE_PARTIAL", "fold_dir", "fold_log", "forecast_plot", "write_json", "_holder",
    "append_metrics", "check_config", "lock", "read_config", "scores", "started_config",
    "truncate_metrics", "write_config",
]
