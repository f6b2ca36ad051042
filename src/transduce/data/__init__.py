"""Data: the built-in number-words task, vocabularies and batching."""
