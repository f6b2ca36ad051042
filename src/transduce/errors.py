"""The one exception type that the command line turns into a one-line message."""


class UserError(Exception):
    """A mistake in the user's input (arguments, files, configs), not a bug.

    The command line prints its message on one line, without a traceback, and exits non-zero.
    The message should name the file (and line) at fault and say what to do.
    """
