"""Who holds a claim: a token per driver, never the process.

A driver is one execution of a run (a start, a resume, the close of an abandoned run) or one
summary fold. Its token is the ``lease_owner`` of what it claims, so two drivers in one
process race exactly as two processes do: the second finds the first's live lease and loses
before any side effect.
"""

from __future__ import annotations

import os
import socket
import uuid

HOST = socket.gethostname()


def new_token() -> str:
    """A fresh owner for one driver's claims: host, process and a random part (the process alone is not enough)."""
    return f"{HOST}:{os.getpid()}:{uuid.uuid4().hex}"
