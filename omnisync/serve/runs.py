"""Runs the server drives apart from the requests that asked for them, and their events.

A run started or resumed over HTTP is driven by an asyncio task of its own: the request only
waits for it (JSON) or follows its events (SSE), so a client that goes away leaves the run
going, and it finishes and is stored. Each event is kept, numbered from 1 within its run, so
``GET .../events`` replays a run from the start or from ``Last-Event-ID`` and then follows it
live: nothing missed, nothing repeated.

The events live in this process's memory (the last ``KEPT_RUNS`` runs): only the server
process that drove a run can replay its events. Elsewhere (another worker, after a restart)
the events route gives the run's end as its record holds it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .._logging import logger
from ..aio_stream import AsyncAgentStream
from ..errors import RunConflictError
from ..results import RunResult
from .wire import event_to_wire, run_id_of

KEPT_RUNS = 512
KEEPALIVE_SECONDS = 15.0


@dataclass(frozen=True)
class Logged:
    """One event of a run as the events route sends it."""

    id: int
    name: str
    data: dict[str, Any]


class RunLog:
    """The events of one run, in order; ``live`` while a drive in this process adds to it."""

    events: list[Logged]
    live: Drive | None

    def __init__(self) -> None:
        self.events = []
        self.live = None
        self._changed = asyncio.Condition()

    async def append(self, name: str, data: dict[str, Any]) -> int:
        async with self._changed:
            self.events.append(Logged(len(self.events) + 1, name, data))
            self._changed.notify_all()
            return len(self.events)

    async def set_live(self, drive: Drive | None) -> None:
        async with self._changed:
            self.live = drive
            self._changed.notify_all()

    async def follow(self, after: int, keepalive: float = KEEPALIVE_SECONDS) -> AsyncIterator[Logged | None]:
        """The events with an id above ``after``, then each new one until the drive ends; None is a keep-alive."""
        index = max(after, 0)
        while True:
            async with self._changed:
                if index >= len(self.events) and self.live is not None:
                    try:
                        await asyncio.wait_for(self._changed.wait(), keepalive)
                    except asyncio.TimeoutError:
                        pass
                batch = self.events[index:]
                ended = self.live is None
            for event in batch:
                yield event
            index += len(batch)
            if ended and index >= len(self.events):
                return
            if not batch:
                yield None


class Drive:
    """One start or resume of a run, driven by its own task.

    ``started`` gives the run's log and the id of this drive's first event, or the error that
    kept the run from starting (a busy session, an unknown run...); ``finished`` gives what
    ``run()`` returns, or raises what it would.
    """

    agent: str
    stream: AsyncAgentStream
    run_id: str | None
    started: asyncio.Future[tuple[RunLog, int]]
    finished: asyncio.Future[RunResult]
    task: asyncio.Task[None]

    def __init__(self, hub: RunHub, agent: str, stream: AsyncAgentStream, on_start: Callable[[str], Awaitable[None]] | None) -> None:
        loop = asyncio.get_running_loop()
        self.agent = agent
        self.stream = stream
        self.run_id = None
        self.started = loop.create_future()
        self.finished = loop.create_future()
        for future in (self.started, self.finished):
            future.add_done_callback(_retrieve)  # an error nobody awaited is not an "unretrieved exception"
        self._hub = hub
        self._on_start = on_start
        self.task = asyncio.create_task(self._pump())

    def interrupt(self) -> None:
        """Stop the run where it stands: its reply so far is kept, marked partial, and it ends cancelled."""
        self.stream.blocking.interrupt()

    async def _pump(self) -> None:
        log: RunLog | None = None
        try:
            async for event in self.stream:
                if log is None:
                    run_id = run_id_of(event)
                    if run_id is None:  # the run could not start; the stream raises why next
                        continue
                    self.run_id = run_id
                    log = await self._hub._attach(self.agent, run_id, self)
                    if self._on_start is not None:
                        await self._on_start(run_id)
                    first = await log.append(*event_to_wire(event))
                    self.started.set_result((log, first))
                    continue
                await log.append(*event_to_wire(event))
            self.finished.set_result(self.stream.result)
        except BaseException as error:
            for future in (self.started, self.finished):
                if not future.done():
                    future.set_exception(error)
            if not isinstance(error, Exception):
                raise
            if log is None:
                logger.info("a run of agent %r did not start: %s", self.agent, error)
        finally:
            if log is not None:
                await log.set_live(None)
            self._hub._drives.discard(self)


class RunHub:
    """The drives under way in this process and the event logs of recent runs."""

    def __init__(self, kept: int = KEPT_RUNS) -> None:
        self._kept = kept
        self._logs: OrderedDict[tuple[str, str], RunLog] = OrderedDict()
        self._drives: set[Drive] = set()

    def drive(self, agent: str, stream: AsyncAgentStream, on_start: Callable[[str], Awaitable[None]] | None = None) -> Drive:
        """Start driving ``stream`` in a task of its own."""
        drive = Drive(self, agent, stream, on_start)
        self._drives.add(drive)
        return drive

    def log(self, agent: str, run_id: str) -> RunLog | None:
        return self._logs.get((agent, run_id))

    def live(self, agent: str, run_id: str) -> Drive | None:
        log = self.log(agent, run_id)
        return log.live if log is not None else None

    def check_not_live(self, agent: str, run_id: str) -> None:
        if self.live(agent, run_id) is not None:
            raise RunConflictError(f"run {run_id} is running in this server now: follow its events, or cancel it")

    async def _attach(self, agent: str, run_id: str, drive: Drive) -> RunLog:
        key = (agent, run_id)
        log = self._logs.get(key)
        if log is None:
            log = self._logs[key] = RunLog()
            self._forget_old()
        else:
            self._logs.move_to_end(key)
        await log.set_live(drive)
        return log

    def _forget_old(self) -> None:
        for key in list(self._logs)[: max(len(self._logs) - self._kept, 0)]:
            if self._logs[key].live is None:
                del self._logs[key]

    async def close(self, grace: float) -> None:
        """Let the runs under way finish for up to ``grace`` seconds, then stop the rest (cancelled, text kept)."""
        drives = list(self._drives)
        if not drives:
            return
        _, pending = await asyncio.wait([d.task for d in drives], timeout=grace)
        for drive in drives:
            if drive.task in pending:
                logger.warning("stopping run %s of agent %r: the server is shutting down", drive.run_id, drive.agent)
                drive.interrupt()
        if pending:
            await asyncio.wait(pending)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
