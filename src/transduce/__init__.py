"""transduce: the Transformer of "Attention Is All You Need", from scratch in PyTorch.

``transduce.load(PATH)``, ``transduce.Forecaster`` and ``transduce.backtest`` are
:mod:`transduce.api`'s, imported on first use so that ``import transduce`` stays light.
"""

from transduce.version import __version__

__all__ = ["Forecaster", "__version__", "backtest", "load"]


def load(path, device: str = "auto", precision: str = "auto", verbose: bool = True):
    """The model in a run directory, checkpoint or export (see
    :func:`transduce.api.loading.load`)."""
    from transduce.api.loading import load as _load  # torch loads on first use, not import

    return _load(path, device, precision, verbose)


def __getattr__(name: str):
    if name in ("Forecaster", "backtest"):
        from transduce import api  # torch loads on first use, not import

        return getattr(api, name)
    raise AttributeError(f"module 'transduce' has no attribute {name!r}")
