"""Runs the server drives apart from the requests that asked for them, and their events.

A run started or resumed over HTTP is driven by an asyncio task of its own: the request only
waits for it (JSON) or follows its events (SSE), so a client that goes away leaves the run
going, and it finishes and is stored.

Every event is kept in the run's store (:meth:`~omnisync.agent.OmniCoreAgent.append_run_events`),
numbered 1, 2, 3... within the run across all its drives, so any worker replays a run from
the start or from ``Last-Event-ID`` and then follows it, polling the store from its cursor.
Text deltas are coalesced before they are stored: one record per ``FLUSH_SECONDS`` or
``FLUSH_CHARS`` of text, and at every other event, so a long answer is a few dozen records.
The request that drives a run gets each delta as it comes, with the id ``N:k``: the first
``k`` characters of the text of stored event ``N + 1``; resuming from ``N:k`` replays that
event without those characters. So the text a client sees is the same live and replayed,
nothing missed and nothing repeated.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from .. import aio
from .._aio_pool import call as in_thread
from .._logging import logger
from ..aio_stream import AsyncAgentStream
from ..errors import ModelError, RemoteError, RunConflictError
from ..results import RunResult
from ..run_events import TextDelta
from ..run_record import PAUSED_STATUSES, RUNNING, RunRecord
from ..runner import result_of
from ..wire import ENDING_EVENTS, event_to_wire, http_status, run_id_of
from .failures import log_failure

KEEPALIVE_SECONDS = 15.0
FLUSH_SECONDS = 1.0
"""Text deltas are stored at least this often while a model streams."""
FLUSH_CHARS = 4000
"""... and whenever this many characters of text are waiting."""
POLL_SECONDS = (0.05, 1.0)
"""A follower reads the store again after the first delay, doubling to the second while nothing comes."""
SETTLED_SECONDS = 5.0
"""A run that has not been running for this long has stored its ending, if it ever will."""


@dataclass(frozen=True)
class Cursor:
    """Where a follower stands: after stored event ``id``, and ``chars`` characters into the next (a text delta)."""

    id: int = 0
    chars: int = 0

    def __str__(self) -> str:
        return f"{self.id}:{self.chars}" if self.chars else str(self.id)

    @classmethod
    def parse(cls, text: str) -> Cursor | None:
        """The cursor an id this server sent names, or None if ``text`` is not one."""
        head, colon, tail = text.partition(":")
        if not (head.isdigit() and len(head) < 12) or (colon and not (tail.isdigit() and len(tail) < 12)):
            return None
        return cls(int(head), int(tail) if colon else 0)


@dataclass(frozen=True)
class Sent:
    """One event as the events routes send it."""

    id: str
    name: str
    data: dict[str, Any]


class Drive:
    """One start or resume of a run, driven by its own task.

    ``started`` gives the run id, or the error that kept the run from starting (a busy
    session, an unknown run...); ``finished`` gives what ``run()`` returns, or raises what it
    would. :meth:`follow` gives this drive's events as they come.
    """

    name: str
    agent: aio.OmniCoreAgent
    stream: AsyncAgentStream
    run_id: str | None
    started: asyncio.Future[str]
    finished: asyncio.Future[RunResult]
    task: asyncio.Task[None]

    def __init__(
        self, hub: RunHub, name: str, agent: aio.OmniCoreAgent, stream: AsyncAgentStream, on_start: Callable[[str], Awaitable[None]] | None
    ) -> None:
        loop = asyncio.get_running_loop()
        self.name = name
        self.agent = agent
        self.stream = stream
        self.run_id = None
        self.started = loop.create_future()
        self.finished = loop.create_future()
        for future in (self.started, self.finished):
            future.add_done_callback(_retrieve)  # an error nobody awaited is not an "unretrieved exception"
        self._hub = hub
        self._on_start = on_start
        self._sent: list[Sent] = []
        self._ended = False
        self._changed = asyncio.Condition()
        self._stored = 0  # the id of the last event stored
        self._text: list[str] = []  # text deltas not stored yet
        self._text_chars = 0
        self._text_since = 0.0
        self.task = asyncio.create_task(self._pump())

    def interrupt(self) -> None:
        """Stop the run where it stands: its reply so far is kept, marked partial, and it ends cancelled."""
        self.stream.blocking.interrupt()

    async def follow(self, keepalive: float = KEEPALIVE_SECONDS) -> AsyncIterator[list[Sent]]:
        """This drive's events from its first, as they come, until it ends: every event that came
        since the last batch in one, so a client that reads slower than the model writes gets
        fewer, larger writes; an empty batch is a keep-alive."""
        index = 0
        while True:
            async with self._changed:
                if index >= len(self._sent) and not self._ended:
                    try:
                        await asyncio.wait_for(self._changed.wait(), keepalive)
                    except asyncio.TimeoutError:
                        pass
                batch, ended = self._sent[index:], self._ended
            if batch:
                yield batch
            index += len(batch)
            if ended and index >= len(self._sent):
                return
            if not batch:
                yield []

    async def _pump(self) -> None:
        feed = _Feed(self.stream.blocking)
        try:
            while not feed.ended:
                due = self._text_since + FLUSH_SECONDS - time.monotonic() if self._text else None
                batch = await feed.batch(max(due, 0) if due is not None else None)
                if not batch:  # the model is slow to say more: store the text so far
                    await self._store([])
                    continue
                for event in batch:
                    await self._take(event)
            await self._store([])
            self.finished.set_result(self.stream.result)
        except BaseException as error:
            if not isinstance(error, Exception):  # this task was cancelled: the run stops, its text kept
                self.stream.blocking.interrupt()
                await asyncio.shield(feed.done)
            if isinstance(error, Exception):
                await self._store([])  # the text the run said before it failed
                if http_status(error) >= 500 and not isinstance(error, (ModelError, RemoteError)):
                    log_failure(error, f"run {self.run_id} of agent {self.name!r}")
            for future in (self.started, self.finished):
                if not future.done():
                    future.set_exception(error)
            if not isinstance(error, Exception):
                raise
            if self.run_id is None:
                logger.info("a run of agent %r did not start: %s", self.name, error)
        finally:
            async with self._changed:
                self._ended = True
                self._changed.notify_all()
            if self.run_id is not None:
                self._hub._detach(self)
            self._hub._drives.discard(self)

    async def _take(self, event: Any) -> None:
        if self.run_id is None:
            run_id = run_id_of(event)
            if run_id is None:  # the run could not start; the stream raises why next
                return
            self.run_id = run_id
            self._stored = await self.agent.append_run_events(run_id, [])
            self._hub._attach(self)
            if self._on_start is not None:
                await self._on_start(run_id)
            self.started.set_result(run_id)
            await asyncio.sleep(0)  # the answer that waits for the run to start goes now, not after this batch
        name, data = event_to_wire(event)
        if isinstance(event, TextDelta):
            if not self._text:
                self._text_since = time.monotonic()
            self._text.append(event.text)
            self._text_chars += len(event.text)
            await self._send(Sent(str(Cursor(self._stored, self._text_chars)), name, data))
            if self._text_chars >= FLUSH_CHARS:
                await self._store([])
            return
        await self._store([(name, data)])
        await self._send(Sent(str(self._stored), name, data))

    async def _store(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        """The text waiting, as one text delta, then ``events``: one write."""
        if self._text:
            events = [("text_delta", {"run_id": self.run_id, "text": "".join(self._text)}), *events]
            self._text, self._text_chars = [], 0
        if not events or self.run_id is None:
            return
        try:
            self._stored = await self.agent.append_run_events(self.run_id, events)
        except Exception:  # the run goes on; followers elsewhere miss these events, this request does not
            logger.exception("the events of run %s of agent %r could not be stored", self.run_id, self.name)
            self._stored += len(events)
        self._hub._nudge(self.name, self.run_id)

    async def _send(self, event: Sent) -> None:
        async with self._changed:
            self._sent.append(event)
            self._changed.notify_all()


class RunHub:
    """The drives under way in this process; the events of any run, read from its store."""

    def __init__(self) -> None:
        self._drives: set[Drive] = set()
        self._live: dict[tuple[str, str], Drive] = {}
        self._nudges: dict[tuple[str, str], set[asyncio.Event]] = {}  # each follower's, while it waits

    def drive(
        self, name: str, agent: aio.OmniCoreAgent, stream: AsyncAgentStream, on_start: Callable[[str], Awaitable[None]] | None = None
    ) -> Drive:
        """Start driving ``stream`` in a task of its own."""
        drive = Drive(self, name, agent, stream, on_start)
        self._drives.add(drive)
        return drive

    def drives_agent(self, agent: aio.OmniCoreAgent) -> bool:
        """Whether a drive of this process runs one of ``agent``'s runs now."""
        return any(drive.agent is agent for drive in self._drives)

    def live(self, name: str, run_id: str) -> Drive | None:
        return self._live.get((name, run_id))

    def check_not_live(self, name: str, run_id: str) -> None:
        if self.live(name, run_id) is not None:
            raise RunConflictError(f"run {run_id} is running in this server now: follow its events, or cancel it")

    async def follow(
        self, name: str, agent: aio.OmniCoreAgent, run_id: str, after: Cursor, keepalive: float = KEEPALIVE_SECONDS
    ) -> AsyncIterator[list[Sent]]:
        """The run's stored events after ``after``, then each one stored later, until the run
        pauses or ends, a page read from the store in a batch; an empty batch is a keep-alive. A run that stored no ending (driven by a local
        agent, or by a server before events were stored) ends with its record's, id ``final``."""
        cursor, skip = after.id, after.chars
        delay, quiet_since, ending = POLL_SECONDS[0], time.monotonic(), None
        if cursor > 0 and not skip:  # a follower that has seen the run pause or end gets nothing more
            last = await agent.read_run_events(run_id, cursor - 1, 1)
            ending = last[0].name if last and last[0].name in ENDING_EVENTS else None
        while True:
            page = await agent.read_run_events(run_id, cursor)
            batch = []
            for event in page:
                data = event.data
                if skip and event.name == "text_delta":  # the client has these characters already
                    data = {**data, "text": data["text"][skip:]}
                skip = 0
                cursor, ending = event.id, event.name if event.name in ENDING_EVENTS else None
                if data.get("text") != "":
                    batch.append(Sent(str(event.id), event.name, data))
            if batch:
                yield batch
            if page:
                delay, quiet_since = POLL_SECONDS[0], time.monotonic()
                continue
            if ending is not None and not (ending == "run_paused" and await _went_on(agent, run_id)):
                return
            if delay >= POLL_SECONDS[1]:
                final = await self._final_if_settled(agent, run_id)
                if final is not None:
                    yield [final]
                    return
            if time.monotonic() - quiet_since >= keepalive:
                quiet_since = time.monotonic()
                yield []
            if not await self._nudged(name, run_id, delay):
                delay = min(delay * 2, POLL_SECONDS[1])

    async def _final_if_settled(self, agent: aio.OmniCoreAgent, run_id: str) -> Sent | None:
        """The run's end from its record, once it has not been running for SETTLED_SECONDS (its
        ending, if it stored one, is stored by then). A run whose process died is running until
        resumed, so it is followed until then."""
        record: dict[str, Any] = dict(await agent.get_run(run_id))
        updated = record.get("updated_at")
        if record["status"] == RUNNING or (updated and datetime.fromisoformat(updated) > datetime.now(timezone.utc) - timedelta(seconds=SETTLED_SECONDS)):
            return None
        result = result_of(RunRecord.from_record(record))
        return Sent("final", "run_paused" if result["status"] in PAUSED_STATUSES else "run_finished", {"run_id": run_id, "result": result})

    def _attach(self, drive: Drive) -> None:
        assert drive.run_id is not None
        self._live[(drive.name, drive.run_id)] = drive

    def _detach(self, drive: Drive) -> None:
        assert drive.run_id is not None
        if self._live.get((drive.name, drive.run_id)) is drive:
            del self._live[(drive.name, drive.run_id)]
        self._nudge(drive.name, drive.run_id)

    async def _nudged(self, name: str, run_id: str, timeout: float) -> bool:
        """Whether a drive in this process stored events of the run within ``timeout`` seconds."""
        key, nudge = (name, run_id), asyncio.Event()
        self._nudges.setdefault(key, set()).add(nudge)
        try:
            await asyncio.wait_for(nudge.wait(), timeout)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            waiting = self._nudges.get(key)
            if waiting is not None:
                waiting.discard(nudge)
                if not waiting:
                    del self._nudges[key]

    def _nudge(self, name: str, run_id: str) -> None:
        """Wake this process's followers of the run: its events changed."""
        for nudge in self._nudges.pop((name, run_id), set()):
            nudge.set()

    async def close(self, grace: float) -> None:
        """Let the runs under way finish for up to ``grace`` seconds, then stop the rest (cancelled, text kept)."""
        drives = list(self._drives)
        if not drives:
            return
        _, pending = await asyncio.wait([d.task for d in drives], timeout=grace)
        for drive in drives:
            if drive.task in pending:
                logger.warning("stopping run %s of agent %r: the server is shutting down", drive.run_id, drive.name)
                drive.interrupt()
        if pending:
            await asyncio.wait(pending)


class _Feed:
    """A blocking stream iterated in one worker thread, its events handed to the event loop as
    they come, and taken in batches: one thread for the whole run, not a thread hop per event."""

    def __init__(self, stream: Any) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.ended = False
        self.done = asyncio.ensure_future(in_thread(self._produce, stream))

    def _produce(self, stream: Any) -> None:
        put = self._queue.put_nowait
        try:
            for event in stream:
                self._loop.call_soon_threadsafe(put, ("event", event))
        except BaseException as error:  # handed to the loop; raised there by batch()
            self._loop.call_soon_threadsafe(put, ("error", error))
        else:
            self._loop.call_soon_threadsafe(put, ("end", None))

    async def batch(self, timeout: float | None) -> list[Any]:
        """Every event that has come, waiting up to ``timeout`` seconds for the first; raises what the stream raised."""
        try:
            first = await asyncio.wait_for(self._queue.get(), timeout)
        except asyncio.TimeoutError:
            return []
        items = [first]
        while not self._queue.empty():
            items.append(self._queue.get_nowait())
        events: list[Any] = []
        for kind, item in items:
            if kind == "error":
                self.ended = True
                if events:  # what came before the error is taken first; the error comes next time
                    self._queue.put_nowait((kind, item))
                    self.ended = False
                    return events
                raise item
            if kind == "end":
                self.ended = True
                return events
            events.append(item)
        return events


async def _went_on(agent: aio.OmniCoreAgent, run_id: str) -> bool:
    """Whether a run whose last stored event is a pause is no longer paused (resumed, or cancelled):
    its events are on their way, or its record's ending is (see ``_final_if_settled``)."""
    record: dict[str, Any] = dict(await agent.get_run(run_id))
    return record["status"] not in PAUSED_STATUSES


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
