"""How ``transduce.load`` opens the forecast family's paths (the ``forecast`` entry of
:mod:`transduce.families`): a run (one series set, or many series for a global run) or a
blend of runs."""

from __future__ import annotations

from transduce.api.forecaster import Forecaster
from transduce.api.loading import cpu_float32_only
from transduce.errors import UserError


def load_forecaster(path, device: str, precision: str, verbose: bool):
    """A :class:`Forecaster` (a :class:`GlobalForecaster` for a global run). A forecaster
    runs on the CPU in float32, so another ``device`` or ``precision`` is refused, as the
    command line refuses a setting it would ignore."""
    if isinstance(path, (list, tuple)):
        raise UserError(
            f"{', '.join(map(str, path))}: forecasting runs load one at a time; to forecast "
            "with several, blend them (transduce forecast blend RUN RUN ... --output DIR)"
        )
    cpu_float32_only(path, device, precision, "a forecaster")
    return Forecaster(path)  # a GlobalForecaster for a global run
