"""Forecasting models built from the Transformer's blocks (``models``, ``channel``), the
baselines they are measured against (``baselines``) and quantile outputs (``quantiles``)."""
