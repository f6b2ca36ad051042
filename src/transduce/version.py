"""The package's version, in a module of its own: the checkpoint record and the command line
read it without importing the package's entry points."""

__version__ = "0.2.0.dev0"  # 0.2.0 once issues 70–72 land (CHANGELOG.md)
