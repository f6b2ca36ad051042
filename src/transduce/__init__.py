"""transduce: the Transformer of "Attention Is All You Need", from scratch in PyTorch."""

__version__ = "0.1.0"


def load(path, device: str = "auto", precision: str = "auto", verbose: bool = True):
    """The model in a run directory, checkpoint or export (see :func:`transduce.api.load`)."""
    from transduce.api import load as _load

    return _load(path, device, precision, verbose)
