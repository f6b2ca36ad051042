"""Forecasting time series with the translation encoder/decoder (shared by import)."""
