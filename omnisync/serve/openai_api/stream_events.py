"""A run's events as the Responses API streams them: ``response.created``, ``response.output_text.delta``,
..., ``response.completed``, each with its ``sequence_number``.

The final event carries the Response as it is stored (its items' ids are the stored
messages'); the items announced while the answer streams have ids of their own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import Any

from ..runs import Sent
from .items import output_message, output_text

Event = dict[str, Any]
ENDINGS = {"completed": "response.completed", "incomplete": "response.incomplete", "failed": "response.failed", "cancelled": "response.failed"}


class ResponseEvents:
    """Turns a run's events (:class:`~omnisync.serve.runs.Sent`) into Responses stream events."""

    def __init__(self, snapshot: dict[str, Any], final: Callable[[], Awaitable[dict[str, Any]]], server_label: str, client_tools: Collection[str] = ()) -> None:
        self._client_tools = frozenset(client_tools)
        self._snapshot = snapshot
        self._final = final
        self._label = server_label
        self._sequence = 0
        self._output = 0  # items announced so far
        self._text: list[str] | None = None  # the open message's text, while one is streaming
        self._calls: dict[str, dict[str, Any]] = {}

    def _event(self, kind: str, **fields: Any) -> Event:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event

    def opening(self) -> list[Event]:
        return [self._event("response.created", response=self._snapshot), self._event("response.in_progress", response=self._snapshot)]

    async def of(self, sent: Sent) -> list[Event]:
        if sent.name == "text_delta":
            return self._delta(sent.data["text"])
        events = self._close_message()
        if sent.name == "tool_call" and sent.data["name"] in self._client_tools:
            events += self._function_call(sent.data)
        elif sent.name == "tool_call":
            self._calls[sent.data["call_id"]] = sent.data
        elif sent.name == "tool_result":
            call = self._calls.get(sent.data["call_id"], {})
            item = {
                "type": "mcp_call", "id": f"mcp_{self._snapshot['id']}_{self._output}", "server_label": self._label, "name": sent.data["name"],
                "arguments": call.get("arguments", ""), "output": sent.data["content"], "error": None, "status": "completed",
            }
            events += [
                self._event("response.output_item.added", output_index=self._output, item={**item, "status": "in_progress", "output": None}),
                self._event("response.output_item.done", output_index=self._output, item=item),
            ]
            self._output += 1
        elif sent.name in ("run_finished", "run_paused", "run_failed"):
            response = await self._final()
            events.append(self._event(ENDINGS[response["status"]] if response["status"] in ENDINGS else "response.completed", response=response))
        return events

    def _function_call(self, call: dict[str, Any]) -> list[Event]:
        """A call of a client's tool: announced, its arguments in one delta, done. The item has no
        ``id`` until the response completes (its stored message's), so clients match it by ``call_id``."""
        item_id, index = f"fc_{self._snapshot['id']}_{self._output}", self._output
        self._output += 1
        item = {"type": "function_call", "call_id": call["call_id"], "name": call["name"], "arguments": call["arguments"], "status": "completed"}
        return [
            self._event("response.output_item.added", output_index=index, item={**item, "arguments": "", "status": "in_progress"}),
            self._event("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=call["arguments"]),
            self._event("response.function_call_arguments.done", item_id=item_id, output_index=index, name=call["name"], arguments=call["arguments"]),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def _item_id(self) -> str:
        return f"msg_{self._snapshot['id']}_{self._output}"

    def _delta(self, text: str) -> list[Event]:
        events = []
        if self._text is None:
            self._text = []
            item = {**output_message(self._item_id(), "", "in_progress"), "content": []}
            events += [
                self._event("response.output_item.added", output_index=self._output, item=item),
                self._event("response.content_part.added", item_id=self._item_id(), output_index=self._output, content_index=0, part=output_text("")),
            ]
        self._text.append(text)
        events.append(self._event("response.output_text.delta", item_id=self._item_id(), output_index=self._output, content_index=0, delta=text, logprobs=[]))
        return events

    def _close_message(self) -> list[Event]:
        if self._text is None:
            return []
        text, item_id, index = "".join(self._text), self._item_id(), self._output
        self._text = None
        self._output += 1
        return [
            self._event("response.output_text.done", item_id=item_id, output_index=index, content_index=0, text=text, logprobs=[]),
            self._event("response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=output_text(text)),
            self._event("response.output_item.done", output_index=index, item=output_message(item_id, text)),
        ]


async def sse(events: ResponseEvents, batches: AsyncIterator[list[Sent]]) -> AsyncIterator[bytes]:
    """The stream's bytes: each event as ``event:`` and ``data:`` lines; a keep-alive comment for an empty batch."""
    yield _bytes(events.opening())
    async for batch in batches:
        if not batch:
            yield b": keep-alive\n\n"
            continue
        out: list[Event] = []
        for sent in batch:
            out += await events.of(sent)
        if out:
            yield _bytes(out)


def _bytes(events: list[Event]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False, separators=(',', ':'))}\n\n".encode() for e in events)
