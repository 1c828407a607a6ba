"""Bearer tokens, each scoped to the agents it may use.

Written one token a line (in a file or ``OMNISYNC_SERVE_TOKENS``, where ``;`` also separates):

    TOKEN agent_a,agent_b     # this token may use two agents
    TOKEN *                   # every agent

A token is compared with every configured one in constant time (``hmac.compare_digest`` on
their SHA-256 digests, so neither content nor length leaks through timing). An agent a token
may not use does not exist for it: the server answers 404, as for an unknown agent.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Collection, Iterable, Mapping

from ..errors import ConfigurationError

ALL_AGENTS = "*"
MIN_TOKEN_LENGTH = 16


class Tokens:
    """The configured tokens; ``agents_for(presented)`` is the set of agents it may use, or None."""

    def __init__(self, scopes: Mapping[str, Collection[str]], agents: Iterable[str]) -> None:
        known = set(agents)
        self._scopes: list[tuple[bytes, frozenset[str]]] = []
        for token, names in scopes.items():
            if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH or any(c.isspace() for c in token):
                raise ConfigurationError(
                    f"a token must be at least {MIN_TOKEN_LENGTH} characters without spaces "
                    "(make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
                )
            names = set(names)
            unknown = names - known - {ALL_AGENTS}
            if unknown or not names:
                raise ConfigurationError(
                    f"a token is scoped to {', '.join(sorted(unknown)) or 'no agent'}; the agents served are: {', '.join(sorted(known))} (or * for all)"
                )
            self._scopes.append((_digest(token), frozenset(known if ALL_AGENTS in names else names)))

    def agents_for(self, presented: str) -> frozenset[str] | None:
        digest = _digest(presented)
        found: frozenset[str] | None = None
        for configured, agents in self._scopes:  # no early exit: every token is compared
            if hmac.compare_digest(digest, configured):
                found = agents
        return found

    def __len__(self) -> int:
        return len(self._scopes)


def parse_tokens(text: str, where: str) -> dict[str, list[str]]:
    """``{token: [agent, ...]}`` from the line format above; ``where`` names the source in errors."""
    scopes: dict[str, list[str]] = {}
    for number, raw in enumerate(text.replace(";", "\n").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        token, _, agents = line.partition(" ")
        names = [name.strip() for name in agents.split(",") if name.strip()]
        if not names:
            raise ConfigurationError(f"{where}, entry {number}: write 'TOKEN AGENT[,AGENT...]' or 'TOKEN *'")
        if token in scopes:
            raise ConfigurationError(f"{where}, entry {number}: a token is listed twice")
        scopes[token] = names
    return scopes


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
