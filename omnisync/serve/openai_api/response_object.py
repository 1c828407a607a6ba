"""A run as a Response object: its status, its output items (read from the session), its usage.

A run's status maps to a response's: running is ``in_progress``, a completed run
``completed`` (``incomplete`` when the output limit cut its answer), failed ``failed``,
cancelled ``cancelled``; a run paused for an approval or a budget is ``incomplete``, and the
response's ``omnisync`` key says what it waits for (``status``, ``approvals`` or
``budget_request``, and the ``run_id`` to decide with on the server's own routes). The agent's own tool calls
appear as ``mcp_call`` items (the server ran them), ``server_label`` the agent.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from datetime import datetime
from typing import Any

from ... import aio
from ...run_record import AWAITING_APPROVAL, AWAITING_BUDGET, CANCELLED, COMPLETED, FAILED, RUNNING
from .items import input_parts, output_message

ERROR_CODE = "server_error"
PAGE = 200


async def run_output(agent: aio.OmniCoreAgent, run: dict[str, Any], server_label: str, client_tools: Collection[str] = ()) -> list[dict[str, Any]]:
    """The messages the run wrote, but its user message, as output items."""
    first = run.get("first_written_seq")
    if first is None:
        return []
    page = await agent.get_session_history_page(run["session_id"], cursor=str(first - 1), limit=PAGE, include_inactive=True)
    messages = []
    for message in page["messages"]:
        if message.get("run_id") not in (run["run_id"], None):
            break
        if message.get("run_id") == run["run_id"] and message["role"] != "user" and not message.get("summary"):
            messages.append(dict(message))
    return output_items(messages, server_label, client_tools)


def output_items(messages: list[dict[str, Any]], server_label: str, client_tools: Collection[str] = ()) -> list[dict[str, Any]]:
    """Assistant text as ``message`` items; calls of the client's tools as ``function_call`` items, the agent's own (run here) as ``mcp_call``."""
    results = {m.get("tool_call_id"): m for m in messages if m["role"] == "tool"}
    items: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] != "assistant":
            continue
        if message.get("content"):
            items.append(output_message(f"msg_{message['seq']}", str(message["content"]), "incomplete" if message.get("partial") else "completed"))
        for n, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            name, arguments = function.get("name", ""), function.get("arguments", "")
            if name in client_tools:
                items.append({"type": "function_call", "id": f"fc_{message['seq']}_{n}", "call_id": call.get("id", ""), "name": name, "arguments": arguments, "status": "completed"})
                continue
            result = results.get(call.get("id"))
            output = None if result is None else result["content"] if isinstance(result["content"], str) else json.dumps(result["content"])
            items.append(
                {
                    "type": "mcp_call", "id": f"mcp_{message['seq']}_{n}", "server_label": server_label, "name": name,
                    "arguments": arguments, "output": output, "error": None, "status": "completed" if result is not None else "incomplete",
                }
            )
    return items


def usage(run_usage: dict[str, Any]) -> dict[str, Any]:
    prompt, completion = int(run_usage.get("prompt_tokens") or 0), int(run_usage.get("completion_tokens") or 0)
    cached = int((run_usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    reasoning = int((run_usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": int(run_usage.get("total_tokens") or prompt + completion),
    }


def status_of(run: dict[str, Any]) -> tuple[str, dict[str, str] | None]:
    status = run["status"]
    if status == RUNNING:
        return "in_progress", None
    if status == COMPLETED:
        return ("incomplete", {"reason": "max_output_tokens"}) if run.get("finish_reason") == "length" else ("completed", None)
    if status in (AWAITING_APPROVAL, AWAITING_BUDGET):
        return "incomplete", None  # why: the response's "omnisync" key (OpenAI's reasons are only the output limit and the content filter)
    if status == CANCELLED:
        return "cancelled", None
    assert status == FAILED, status
    return "failed", None


def response_object(run: dict[str, Any], request: dict[str, Any], output: list[dict[str, Any]]) -> dict[str, Any]:
    """The Response for a run record and the request kept of it (:mod:`.ledger`)."""
    status, incomplete = status_of(run)
    created = run.get("created_at")
    body: dict[str, Any] = {
        "id": run["run_id"],
        "object": "response",
        "created_at": int(datetime.fromisoformat(created).timestamp()) if created else int(request.get("created_at", 0)),
        "status": status,
        "model": request["model"],
        "output": output,
        "usage": usage(run.get("usage") or {}),
        "error": {"code": ERROR_CODE, "message": str(run.get("error") or "the run failed")} if status == "failed" else None,
        "incomplete_details": incomplete,
        "tools": [],
        "tool_choice": "auto",
        **request["echo"],
    }
    if run["status"] in (AWAITING_APPROVAL, AWAITING_BUDGET):
        body["omnisync"] = paused(run)
    if status == "completed":
        body["completed_at"] = int(datetime.fromisoformat(run["finished_at"]).timestamp()) if run.get("finished_at") else body["created_at"]
    return body


def paused(run: dict[str, Any]) -> dict[str, Any]:
    """What a paused run waits for: its approvals or its budget, decided with the server's own routes."""
    found: dict[str, Any] = {"run_id": run["run_id"], "status": run["status"]}
    if run["status"] == AWAITING_APPROVAL:
        decided = run.get("decisions") or {}
        found["approvals"] = [
            {"id": call["id"], "tool": call["function"]["name"], "arguments": call["function"]["arguments"]}
            for call in run.get("pending_calls") or []
            if call["id"] not in decided
        ]
    else:
        found["budget_request"] = run.get("budget_request")
    return found


def input_items(request: dict[str, Any], response_id: str) -> list[dict[str, Any]]:
    """The input a response was given, as items (ids made from the response's)."""
    found = []
    for n, chat in enumerate(request.get("input") or []):
        item_id = f"msg_{response_id}_{n}"
        if chat["role"] == "tool":
            found.append({"type": "function_call_output", "id": f"fco_{response_id}_{n}", "call_id": chat["tool_call_id"], "output": chat["content"], "status": "completed"})
            continue
        if chat["role"] == "assistant":
            if chat.get("content"):
                found.append(output_message(item_id, str(chat["content"])))
            for k, call in enumerate(chat.get("tool_calls") or []):
                function = call["function"]
                found.append({"type": "function_call", "id": f"fc_{response_id}_{n}_{k}", "call_id": call["id"], "name": function["name"], "arguments": function["arguments"], "status": "completed"})
            continue
        found.append({"type": "message", "id": item_id, "status": "completed", "role": chat["role"], "content": input_parts(chat["content"])})
    return found
