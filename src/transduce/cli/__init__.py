"""The `transduce` command line: one small module per command."""
