"""`python -m transduce` is the `transduce` command."""

from transduce.cli.main import entry

entry()
