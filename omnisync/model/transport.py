"""How a model request goes out through requests: a session per thread, what never changes prepared once.

``requests.Session.post`` merges settings, reads the environment (proxies, ``~/.netrc``, CA
bundles), parses the URL and builds its headers again on every call. Here the environment's
proxy and CA settings are read once, when the transport is built (``NO_PROXY`` honoured), the
URL with its query is prepared once, and each call sends a ``PreparedRequest`` put together
from those parts and the call's body and headers. A session given as ``http_session`` is the
user's: it is used as requests uses it, with its own auth, headers, cookies and environment.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, cast

import requests
from requests.structures import CaseInsensitiveDict

from .. import _env


class Transport:
    """POSTs JSON bodies to one URL; safe to share between threads, each of which gets its own session."""

    def __init__(self, url: str, query: Mapping[str, str], session: requests.Session | None = None) -> None:
        self._url = url
        self._query = dict(query)
        self._given = session
        self.prepared_url: str = requests.Request("POST", url, params=self._query).prepare().url or url
        self._proxies: dict[str, str] = requests.utils.get_environ_proxies(url)
        self._verify: bool | str = _env.ca_bundle() or True
        self._default_headers: CaseInsensitiveDict[str | bytes] = CaseInsensitiveDict(requests.utils.default_headers())
        self._last_merged: tuple[Mapping[str, str], CaseInsensitiveDict[str | bytes]] | None = None
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._sessions_lock = threading.Lock()

    def post(self, body: bytes, headers: Mapping[str, str], *, timeout: float) -> requests.Response:
        """POST ``body`` (JSON) with ``headers`` over requests' defaults; the response's body is left unread."""
        if self._given is not None:
            sent = {"Content-Type": "application/json", **headers}
            return self._given.post(self._url, data=body, headers=sent, params=self._query, timeout=timeout, stream=True)
        session = self._session()
        request = requests.PreparedRequest()
        request.method = "POST"
        request.url = self.prepared_url
        own = self._thread_headers(headers)
        request.headers = cast(Any, own.copy() if session.cookies else own)  # requests' stubs type header values as str | bytes
        request.headers["Content-Length"] = str(len(body))
        request.body = body
        if session.cookies:  # what the server set earlier goes back, as Session.post would send it (in a copy: the Cookie header is this request's alone)
            request.prepare_cookies(session.cookies)
        return session.send(request, timeout=timeout, stream=True, verify=self._verify, proxies=self._proxies, cert=None)

    def _merged(self, headers: Mapping[str, str]) -> CaseInsensitiveDict[str | bytes]:
        """requests' default headers with ``headers`` over them, and JSON's Content-Type unless they
        name one; kept for the next call that passes the same mapping (a client whose headers never change)."""
        last = self._last_merged
        if last is not None and last[0] is headers:
            return last[1]
        merged = self._default_headers.copy()
        merged.update(headers)
        merged.setdefault("Content-Type", "application/json")
        self._last_merged = (headers, merged)  # one assignment: threads see a matching pair
        return merged

    def _thread_headers(self, headers: Mapping[str, str]) -> CaseInsensitiveDict[str | bytes]:
        """This thread's copy of the merged headers, whose Content-Length each of its requests sets
        (one thread sends one request at a time); made again when ``headers`` is another mapping."""
        mine: tuple[Mapping[str, str], CaseInsensitiveDict[str | bytes]] | None = getattr(self._local, "headers", None)
        if mine is None or mine[0] is not headers:
            mine = (headers, self._merged(headers).copy())
            self._local.headers = mine
        return mine[1]

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            session.trust_env = False  # the environment was read once, in __init__
            session.proxies.update(self._proxies)
            session.verify = self._verify
            self._local.session = session
            with self._sessions_lock:
                self._sessions.append(session)
        return session

    def close(self) -> None:
        """Close the sessions this transport opened (never a given one)."""
        with self._sessions_lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()
        self._local = threading.local()
