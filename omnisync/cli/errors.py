"""How a command fails: the exit status and the one line it prints.

    CommandError      exit 1: the command could not do what was asked (a refusal, a failed check)
    └── UsageError    exit 2: the arguments are wrong; the usage is printed too
"""

from __future__ import annotations


class CommandError(Exception):
    """The command cannot do what was asked; it exits 1 with this message."""

    exit_status = 1


class UsageError(CommandError):
    """The arguments or settings are wrong; it exits 2 with the usage and this message."""

    exit_status = 2
