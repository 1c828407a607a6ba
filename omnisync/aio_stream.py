"""``async for event in agent.stream(...)`` in omnisync.aio: the blocking stream, driven from worker threads.

Each step of the stream runs on omnisync.aio's pool, so the event loop never waits on the
network. ``aclose()``, leaving an ``async for`` early, or cancelling the task stops the run
as ``close()`` does in the blocking API: the reply is cut off at once (the HTTP response is
closed from the loop's thread) and its text so far is kept, marked partial.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import cast

from ._aio_pool import call as in_thread
from .results import RunResult
from .streaming import AgentStream, StreamEvent

_END = object()


class AsyncAgentStream:
    """The events of one run, awaitable; ``result`` as on :class:`~omnisync.streaming.AgentStream`."""

    def __init__(self, stream: AgentStream) -> None:
        self._stream = stream
        self._iterator = iter(stream)

    @property
    def result(self) -> RunResult:
        return self._stream.result

    @property
    def blocking(self) -> AgentStream:
        return self._stream

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self

    async def __anext__(self) -> StreamEvent:
        step = asyncio.ensure_future(in_thread(next, self._iterator, _END))
        try:
            event = await asyncio.shield(step)
        except asyncio.CancelledError:
            self._stream.interrupt()  # cuts the reply off; the step in its thread then ends the run
            await asyncio.gather(step, return_exceptions=True)
            await self.aclose()
            raise
        if event is _END:
            raise StopAsyncIteration
        return cast(StreamEvent, event)

    async def aclose(self) -> None:
        """Stop the run where it stands (its text so far kept, marked partial)."""
        self._stream.interrupt()
        await in_thread(self._stream.close)

    async def __aenter__(self) -> AsyncAgentStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
