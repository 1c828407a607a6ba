"""A failed connection, said plainly: what the driver's error means and what to do about it."""

from __future__ import annotations

from ..redact import redact_text

# (words in the driver's message, lower case; what it means; what to do). The first match wins.
_CAUSES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("connection refused", "connect call failed", "error 111"), "nothing listens at {where}", "start the server, or correct the host and port in the URL"),
    (("timed out", "timeout expired", "timeout", "serverselectiontimeout"), "no answer from {where} within {timeout:g} s", "check that the host is up and that no firewall drops the port (or raise --timeout)"),
    (("name or service not known", "nodename nor servname", "could not translate host name", "temporary failure in name resolution", "getaddrinfo failed"), "the host name in the URL does not resolve", "correct the host name, or use its IP address"),
    (("password authentication failed", "authentication failed", "wrongpass", "invalid username-password", "invalid password", "noauth", "auth failed"), "the server refused the user name or password", "correct the user and password in the URL (URL-encode special characters, e.g. @ as %40)"),
    (('role "',), "the server has no such user", "create the role (CREATE ROLE ... LOGIN PASSWORD ...) or correct the user in the URL"),
    (("does not exist",), "the server has no such database", "create it (CREATE DATABASE ...) or correct the database name in the URL"),
    (("no pg_hba.conf entry",), "the server does not accept this user from this host", "add a pg_hba.conf line for this host and user (or connect with sslmode=require if only SSL is allowed)"),
    (("ssl", "tls", "certificate"), "the TLS handshake failed", "match the scheme to the server (rediss:// or ?ssl=true / sslmode=require for TLS, plain otherwise) and check the CA bundle"),
    (("too many clients", "too many connections", "max number of clients"), "the server is at its connection limit", "raise max_connections / maxclients, or pool connections (PgBouncer for PostgreSQL)"),
    (("cluster mode is not enabled", "cluster support disabled"), "this server is not part of a Redis Cluster", "use a redis:// URL for a single server (redis+cluster:// is for a cluster)"),
    (("connection reset", "unexpected eof", "server closed the connection", "connection closed"), "{where} closed the connection at once", "check that the port is the database's and not another service's (a TLS-only port, a proxy)"),
)


def explain(exc: BaseException, where: str, timeout: float, secrets: tuple[str | None, ...] = ()) -> tuple[str, str]:
    """(what happened, what to do) for a connection that could not be made to ``where``."""
    message = _first_line(redact_text(str(exc), secrets))
    lowered = f"{type(exc).__name__} {exc}".lower()
    for words, meaning, fix in _CAUSES:
        if any(word in lowered for word in words):
            return f"{meaning.format(where=where, timeout=timeout)} ({type(exc).__name__}: {message})", fix
    return f"cannot connect to {where} ({type(exc).__name__}: {message})", "check the URL and that the server is running"


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= 240 else line[:239] + "…"
