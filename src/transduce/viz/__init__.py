"""Pictures of what attention does."""

from transduce.viz.heatmaps import plot_attention, plot_positional_encoding

__all__ = ["plot_attention", "plot_positional_encoding"]
