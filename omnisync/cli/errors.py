"""How a command fails, besides the library's own errors (the exit status is decided in ``main``).

    CommandError      the command could not do what was asked (a refusal, a failed check): exit 1
    └── UsageError    the arguments or settings are wrong; the usage is printed too: exit 2
"""

from __future__ import annotations


class CommandError(Exception):
    """The command cannot do what was asked."""


class UsageError(CommandError):
    """The arguments or settings are wrong."""
