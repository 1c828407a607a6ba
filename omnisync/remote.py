"""RemoteAgent: an agent that ``omnisync serve`` serves, with OmniCoreAgent's methods, blocking on requests.

    agent = RemoteAgent("http://127.0.0.1:8000", agent="assistant", token="...")
    result = agent.run("hello", session_id="user_123")

Results are the same dicts, stream events the same classes, and errors the same classes
(SessionBusyError, RunNotFoundError, ConfigurationError...) as a local agent's, so code moves
between the two by changing the constructor. Errors only a server has (a wrong token, an
agent the token may not use, a body over the server's limit) are RemoteError.

``message`` may be a list of content parts, checked here and by the server as a local agent
checks it. An ``output_type`` that is a Python type (a dataclass, a TypedDict, a pydantic model) is
turned into its JSON schema here and sent as the ``response_format`` a local run would send;
``output`` comes back as JSON and is read into the type here, with a local run's checks.

Differences from a local agent: each ``run`` sends an ``Idempotency-Key`` and retries a
request whose connection failed, so it never starts two runs; a stream whose connection
drops reconnects to the run's events where it left off (the run goes on in the server
meanwhile); ``close()`` on a stream before its end cancels the run, as locally, once the
server has sent its first event; session ids cannot hold ``/``; ``clear_session_history``
clears one session at a time.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any, cast
from urllib.parse import quote

import requests

from .agent_protocol import SessionsPage
from .errors import ConfigurationError, OmnisyncError, RemoteError, RunStateError
from .content import UserContent, check_content
from .model.sse import EventParser
from .output import OutputType
from .results import HistoryMessage, HistoryPage, RunRecordDict, RunResult, RunsPage, SessionUsage
from .run_events import RunFailed, RunFinished, RunPaused
from .search.hits import SearchHit
from .run_record import RUNNING, RunRecord
from .runner import new_session_id, result_of
from .wire import ENDING_EVENTS, error_from_wire, event_from_wire, run_id_of
from .streaming import EventStream, StreamEvent, streams
from .telemetry import trace_headers

DEFAULT_TIMEOUT = 60.0
CONNECT_TRIES = 3
RECONNECTS = 3
LARGEST_PAGE = 500  # the most the server sends a page (of messages, or of runs)


class RemoteAgent:
    """One agent of an omnisync server; ``agent`` may be left out when the server serves only one."""

    name: str
    base_url: str
    timeout: float

    def __init__(self, base_url: str, agent: str | None = None, token: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigurationError(f"base_url must be the server's http:// or https:// URL, not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._http = requests.Session()
        if token is not None:
            self._http.headers["Authorization"] = f"Bearer {token}"
        self.name = agent if agent is not None else self._only_agent()

    # --- runs ------------------------------------------------------------------------------

    def run(
        self,
        message: UserContent,
        session_id: str | None = None,
        on_busy: str = "wait",
        output_type: Any = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> RunResult:
        """As :meth:`OmniCoreAgent.run`; a retried request never starts a second run.

        ``message`` may be a list of content parts. A Python ``output_type`` is sent as its JSON
        schema (the ``response_format`` a local run would send) and ``output`` read back into it.
        ``extra_body`` is sent as given; the server checks it as a local run does.
        """
        output = _output(output_type)
        path, body = self._run_request(message, session_id, on_busy, output, extra_body)
        return _read_output(cast(RunResult, self._call("POST", path, body, headers={"Idempotency-Key": uuid.uuid4().hex})), output)

    @streams
    def stream(
        self,
        message: UserContent,
        session_id: str | None = None,
        on_busy: str = "wait",
        output_type: Any = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> RemoteStream:
        """As :meth:`OmniCoreAgent.stream`: the run's events as the server sends them."""
        output = _output(output_type)
        path, body = self._run_request(message, session_id, on_busy, output, extra_body)
        return RemoteStream(self, path, body, {"Idempotency-Key": uuid.uuid4().hex}, output)

    def resume(self, run_id: str, output_type: Any = None) -> RunResult:
        """As :meth:`OmniCoreAgent.resume`: ``output_type`` again reads ``output`` into it."""
        output = _output(output_type)
        return _read_output(cast(RunResult, self._call("POST", self._run_path(run_id, "resume"), _output_body(output))), output)

    @streams
    def resume_stream(self, run_id: str, output_type: Any = None) -> RemoteStream:
        """``resume()``, streamed: the events of :meth:`stream`, from the server."""
        output = _output(output_type)
        return RemoteStream(self, self._run_path(run_id, "resume"), _output_body(output), {}, output)

    def resolve_approval(self, run_id: str, call_id: str, approved: bool, reason: str | None = None) -> RunResult:
        """Record the decision on one tool call of a run that awaits approval; then call ``resume``."""
        body = {"call_id": call_id, "approved": approved, "reason": reason}
        return cast(RunResult, self._call("POST", self._run_path(run_id, "approvals"), body))

    def grant_budget(self, run_id: str, extra_tool_calls: int = 0, extra_tokens: int = 0, extra_steps: int = 0) -> RunResult:
        """Raise the limits of a run that awaits budget by these amounts; then call ``resume``."""
        body = {"extra_tool_calls": extra_tool_calls, "extra_tokens": extra_tokens, "extra_steps": extra_steps}
        return cast(RunResult, self._call("POST", self._run_path(run_id, "budget"), body))

    def cancel_run(self, run_id: str, reason: str | None = None) -> RunResult:
        """Stop a running run or end a paused one as cancelled, on the server; it frees its session."""
        return cast(RunResult, self._call("POST", self._run_path(run_id, "cancel"), {"reason": reason}))

    def get_run(self, run_id: str) -> RunRecordDict:
        """The run's record as the server keeps it."""
        return cast(RunRecordDict, self._call("GET", self._run_path(run_id)))

    def list_runs(self, status: str | None = None, session_id: str | None = None) -> list[RunRecordDict]:
        """Every run of this agent, oldest first (the server's pages followed)."""
        runs: list[RunRecordDict] = []
        cursor: str | None = None
        while True:
            page = self.list_runs_page(status=status, session_id=session_id, cursor=cursor, limit=LARGEST_PAGE)
            runs.extend(page["runs"])
            cursor = page["next_cursor"]
            if cursor is None:
                return runs

    def list_runs_page(
        self, *, status: str | None = None, session_id: str | None = None, cursor: str | None = None, limit: int = 100
    ) -> RunsPage:
        """As :meth:`OmniCoreAgent.list_runs_page`; the server allows up to 500 a page."""
        params = {k: v for k, v in (("status", status), ("session", session_id), ("cursor", cursor), ("limit", limit)) if v is not None}
        return cast(RunsPage, self._call("GET", self._agent_path("runs"), params=params))

    def get_session_usage(self, session_id: str) -> SessionUsage:
        """As :meth:`OmniCoreAgent.get_session_usage`: every model call of the session's runs added up."""
        return cast(SessionUsage, self._call("GET", self._session_path(session_id, "usage")))

    # --- memory ----------------------------------------------------------------------------

    def get_session_history(self, session_id: str, include_inactive: bool = False) -> list[HistoryMessage]:
        """Every message, oldest first (the server's pages followed)."""
        messages: list[HistoryMessage] = []
        cursor: str | None = None
        while True:
            page = self.get_session_history_page(session_id, cursor=cursor, limit=LARGEST_PAGE, include_inactive=include_inactive)
            messages.extend(page["messages"])
            cursor = page["next_cursor"]
            if cursor is None:
                return messages

    def get_session_history_page(
        self, session_id: str, *, cursor: str | None = None, limit: int = 100, include_inactive: bool = False
    ) -> HistoryPage:
        """As :meth:`OmniCoreAgent.get_session_history_page`; the server allows up to 500 a page."""
        params: dict[str, Any] = {"include_inactive": "true" if include_inactive else "false", "limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        return cast(HistoryPage, self._call("GET", self._session_path(session_id, "messages"), params=params))

    def list_sessions_page(self, *, cursor: str | None = None, limit: int = 100) -> SessionsPage:
        """As :meth:`OmniCoreAgent.list_sessions_page`; the server allows up to 500 a page."""
        params: dict[str, Any] = {"limit": limit, **({"cursor": cursor} if cursor is not None else {})}
        return cast(SessionsPage, self._call("GET", self._agent_path("sessions"), params=params))

    def clear_session_history(self, session_id: str | None = None) -> int:
        """Forget one session; return how many messages went."""
        if session_id is None:
            raise ConfigurationError("a RemoteAgent clears one session at a time: pass its session_id")
        return int(self._call("DELETE", self._session_path(session_id))["deleted"])

    # --- editing and searching history -----------------------------------------------------

    def fork_session(self, session_id: str, *, at: int | None = None, new_session_id: str | None = None) -> str:
        """As :meth:`OmniCoreAgent.fork_session`, on the server."""
        body = {"at": at, "new_session_id": new_session_id}
        return str(self._call("POST", self._session_path(session_id, "fork"), body)["session_id"])

    def undo(self, session_id: str) -> list[HistoryMessage]:
        """As :meth:`OmniCoreAgent.undo`, on the server."""
        return cast(list[HistoryMessage], self._call("POST", self._session_path(session_id, "undo"), {})["messages"])

    def regenerate(self, session_id: str, on_busy: str = "raise", output_type: Any = None) -> RunResult:
        """As :meth:`OmniCoreAgent.regenerate`, on the server (not retried: a retry would undo another run)."""
        output = _output(output_type)
        body = {"on_busy": on_busy, **_output_body(output)}
        return _read_output(cast(RunResult, self._call("POST", self._session_path(session_id, "regenerate"), body)), output)

    def search_history(
        self,
        query: str,
        *,
        session_id: str | None = None,
        limit: int = 10,
        before: datetime | None = None,
        after: datetime | None = None,
    ) -> list[SearchHit]:
        """As :meth:`OmniCoreAgent.search_history`, on the server."""
        params: dict[str, Any] = {"q": query, "limit": limit}
        for key, value in (("session", session_id), ("before", before), ("after", after)):
            if value is not None:
                params[key] = value.isoformat() if isinstance(value, datetime) else value
        return cast(list[SearchHit], self._call("GET", self._agent_path("search"), params=params)["hits"])

    # --- lifecycle -------------------------------------------------------------------------

    def cleanup(self) -> None:
        """Close the connections to the server."""
        self._http.close()

    def __enter__(self) -> RemoteAgent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cleanup()

    def __repr__(self) -> str:
        return f"RemoteAgent({self.base_url!r}, agent={self.name!r})"

    # --- HTTP ------------------------------------------------------------------------------

    def _only_agent(self) -> str:
        agents = self._call("GET", "/agents")["agents"]
        if len(agents) != 1:
            raise ConfigurationError(f"the server serves {', '.join(agents) or 'no agent'} to this token: pass agent=NAME")
        return str(agents[0])

    def _run_request(
        self, message: UserContent, session_id: str | None, on_busy: str, output: OutputType | None, extra_body: Mapping[str, Any] | None
    ) -> tuple[str, dict[str, Any]]:
        session_id = new_session_id() if session_id is None else session_id
        content = check_content(message)  # refused now, as a local agent refuses it; the server checks it again
        body = {"message": content, "on_busy": on_busy, **_output_body(output)}
        if extra_body is not None:
            body["extra_body"] = dict(extra_body)
        return self._session_path(session_id, "runs"), body

    def _agent_path(self, *parts: str) -> str:
        return "/".join(["/agents", _segment(self.name, "agent name"), *parts])

    def _session_path(self, session_id: str, *parts: str) -> str:
        return self._agent_path("sessions", _segment(session_id, "session_id"), *parts)

    def _run_path(self, run_id: str, *parts: str) -> str:
        return self._agent_path("runs", _segment(run_id, "run_id"), *parts)

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None, **options: Any) -> Any:
        response = self._send(method, path, body, **options)
        with response:
            return _checked(response).json()

    def _send(self, method: str, path: str, body: dict[str, Any] | None = None, *, stream: bool = False, **options: Any) -> requests.Response:
        """One request; one carrying an Idempotency-Key (or a GET) is sent again when its connection fails."""
        tries = CONNECT_TRIES if method == "GET" or "Idempotency-Key" in (options.get("headers") or {}) else 1
        options["headers"] = trace_headers(options.get("headers"))
        for attempt in range(1, tries + 1):
            try:
                return self._http.request(method, self.base_url + path, json=body, timeout=self.timeout, stream=stream, **options)
            except requests.ConnectionError as exc:
                if attempt == tries:
                    raise RemoteError(f"cannot reach the omnisync server at {self.base_url}: {exc}", status_code=0) from exc
        raise AssertionError("unreachable")


class RemoteStream(EventStream):
    """The events of one remote run, as :class:`~omnisync.streaming.AgentStream` gives a local one's."""

    run_id: str | None

    def __init__(
        self, agent: RemoteAgent, path: str, body: dict[str, Any], headers: dict[str, str], output: OutputType | None = None
    ) -> None:
        self._agent = agent
        self._output = output
        self._open = lambda: agent._send("POST", path, body, stream=True, headers={**headers, "Accept": "text/event-stream"})
        self._response: requests.Response | None = None
        self._ended = False
        self.run_id: str | None = None

    def interrupt(self) -> None:
        """Stop reading: the connection is closed (the run itself goes on; :meth:`close` cancels it)."""
        response = self._response
        if response is not None:
            response.close()

    def close(self) -> None:
        """Before the run paused or ended: cancel it (its text so far kept, marked partial); then close
        the connection. ``result`` is then the run as it ended, as a local stream's."""
        if not self._ended and self.run_id is not None:
            self._ended = True
            try:
                ended = self._agent.cancel_run(self.run_id)
            except RunStateError:  # it paused or ended meanwhile: its record says how
                ended = result_of(RunRecord.from_record(dict(self._agent.get_run(self.run_id))))
            except OmnisyncError:  # the server is gone: nothing to stop, nothing known
                ended = None
            if ended is not None and ended["status"] != RUNNING:
                self._result = ended
        self.interrupt()

    def _drive(self) -> Iterator[StreamEvent]:
        last_id: str | None = None
        reconnects = 0
        opener: Callable[[], requests.Response] = self._open
        while True:
            self._response = _checked(opener())
            try:
                for wire in _server_events(self._response):
                    last_id = wire.id or last_id
                    event = event_from_wire(wire.event, json.loads(wire.data))
                    if isinstance(event, RunFinished):
                        _read_output(event.result, self._output)
                    self.run_id = self.run_id or run_id_of(event)
                    if wire.event in ENDING_EVENTS:
                        self._ended = True
                    if isinstance(event, (RunPaused, RunFinished)):
                        self._result = event.result
                    yield event
                    if isinstance(event, RunFailed):
                        raise event.error
                    if self._ended:
                        return
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
                if self._ended or self.run_id is None or reconnects >= RECONNECTS:
                    raise RemoteError(f"the event stream from {self._agent.base_url} broke: {exc}", status_code=0) from exc
            finally:
                self._response.close()
            if self.run_id is None or reconnects >= RECONNECTS:
                raise RemoteError(f"the event stream from {self._agent.base_url} ended before the run paused or ended", status_code=0)
            reconnects += 1
            opener = self._reopen(self.run_id, last_id)

    def _reopen(self, run_id: str, last_id: str | None) -> Callable[[], requests.Response]:
        headers = {"Accept": "text/event-stream", **({"Last-Event-ID": last_id} if last_id else {})}
        return lambda: self._agent._send("GET", self._agent._run_path(run_id, "events"), stream=True, headers=headers)


def _output(output_type: Any) -> OutputType | None:
    """A Python type or JSON schema checked here, as a local agent checks it, before anything is sent."""
    return None if output_type is None else OutputType.of(output_type)


def _output_body(output: OutputType | None) -> dict[str, Any]:
    """What the server is sent for an output_type: the whole response_format, so its name is a local run's."""
    return {} if output is None else {"output_type": output.response_format}


def _read_output(result: RunResult, output: OutputType | None) -> RunResult:
    """``output`` (parsed JSON over HTTP) read into the Python type asked for, with a local run's checks and errors."""
    if output is not None and "output" in result:
        result["output"] = output.parse(json.dumps(result["output"]), result.get("run_id"))
    return result


def _server_events(response: requests.Response) -> Iterator[Any]:
    parser = EventParser()
    for chunk in response.iter_content(chunk_size=None):
        yield from parser.feed(chunk)


def _checked(response: requests.Response) -> requests.Response:
    if response.status_code < 400:
        return response
    try:
        body = response.json()
    except ValueError:
        body = None
    response.close()
    error = body.get("error") if isinstance(body, dict) else body
    raise error_from_wire(error, response.status_code)


def _segment(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value or "/" in value:
        raise ConfigurationError(f"{what} must be a non-empty string without '/' to be used over HTTP, not {value!r}")
    return quote(value, safe="")
