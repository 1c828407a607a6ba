"""Cassettes for Chat Completions traffic, on vcrpy: scrubbed, matched on the JSON body."""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import MissingDependencyError

RECORD_MODES = ("none", "once", "new_episodes", "all")
SCRUBBED_HEADERS = ("authorization", "cookie", "set-cookie", "openai-organization", "openai-project", "api-key", "x-api-key")
DEFAULT_IGNORED_FIELDS = ("user", "metadata", "safety_identifier", "prompt_cache_key")
_MISSING = object()


class CassetteMismatchError(AssertionError):
    """A request the cassette does not hold; the message names the cassette and the first differing field."""


def first_difference(recorded: Any, sent: Any, path: str = "body") -> str | None:
    """The first place two JSON values differ, as ``path: recorded != sent``; None if equal."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in sorted(set(recorded) | set(sent), key=str):
            difference = first_difference(recorded.get(key, _MISSING), sent.get(key, _MISSING), f"{path}.{key}")
            if difference:
                return difference
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        for index, (a, b) in enumerate(zip(recorded, sent)):
            difference = first_difference(a, b, f"{path}[{index}]")
            if difference:
                return difference
        if len(recorded) != len(sent):
            return f"{path}: {len(recorded)} items recorded, {len(sent)} sent"
        return None
    if recorded == sent:
        return None
    return f"{path}: recorded {_show(recorded)}, sent {_show(sent)}"


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."


def _json_body(request: Any, ignored: frozenset[str]) -> Any:
    body = request.body
    if body is None:
        return None
    if isinstance(body, bytes):
        body = body.decode("utf-8")
    try:
        parsed = json.loads(body)
    except ValueError:
        return body
    if isinstance(parsed, dict):
        parsed = {k: v for k, v in parsed.items() if k not in ignored}
    return parsed


def _scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    headers = response.get("headers", {})
    for name in list(headers):
        if name.lower() in SCRUBBED_HEADERS:
            del headers[name]
    return response


@contextmanager
def cassette(
    name: str,
    folder: str | Path = "cassettes",
    *,
    record_mode: str = "none",
    ignore_fields: Iterable[str] = DEFAULT_IGNORED_FIELDS,
) -> Iterator[Any]:
    """Replay (or record) the HTTP traffic inside the block from ``folder/name.yaml``.

    Requests match on method, path and JSON body, leaving out ``ignore_fields`` (top-level
    body fields that vary between runs). Secrets in headers are never written.
    A streamed reply (server-sent events) is recorded whole once the server has finished
    it and replays as the same bytes, so the client reads the same chunks; omnisync reads
    bodies with ``read1``, not ``iter_content(chunk_size=None)`` (which spun forever on
    replay in older vcrpy, vcrpy#636).
    """
    if record_mode not in RECORD_MODES:
        raise ValueError(f"record_mode must be one of: {', '.join(RECORD_MODES)}; not {record_mode!r}")
    ignored = frozenset(ignore_fields)
    path = Path(folder) / (name if name.endswith(".yaml") else f"{name}.yaml")

    def omnisync_body(sent: Any, recorded: Any) -> None:
        difference = first_difference(_json_body(recorded, ignored), _json_body(sent, ignored))
        if difference:
            raise AssertionError(difference)

    vcr, cannot_overwrite = _vcrpy()
    recorder = vcr.VCR(
        record_mode=record_mode,
        match_on=("method", "path", "omnisync_body"),
        filter_headers=[(header, None) for header in SCRUBBED_HEADERS],
        before_record_response=_scrub_response,
        decode_compressed_response=True,
    )
    recorder.register_matcher("omnisync_body", omnisync_body)
    try:
        with _vcr_logs_quiet(), recorder.use_cassette(str(path), allow_playback_repeats=False) as tape:
            yield tape
    except cannot_overwrite as exc:
        raise CassetteMismatchError(_explain(path, exc)) from None


@contextmanager
def _vcr_logs_quiet() -> Iterator[None]:
    """vcrpy logs each recorded request and response at INFO, headers unscrubbed: keep those records out."""
    logger = logging.getLogger("vcr")
    previous = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(previous)


def _vcrpy() -> tuple[Any, type[Exception]]:
    """vcrpy, imported only when a cassette is used, so the pytest plugin loads without it."""
    try:  # vcrpy ships no type information, so it is imported as a plain (untyped) module
        vcr = importlib.import_module("vcr")
        cannot_overwrite: type[Exception] = importlib.import_module("vcr.errors").CannotOverwriteExistingCassetteException
    except ImportError as exc:
        raise MissingDependencyError(
            "omnisync cassettes need the optional dependency 'vcrpy'. Install it with: pip install 'omnisync[cassettes]'"
        ) from exc
    return vcr, cannot_overwrite


def _explain(path: Path, exc: Any) -> str:
    """Why ``exc`` (vcrpy's CannotOverwriteExistingCassetteException) was raised, in words."""
    # Worked out from the cassette rather than read from exc.reason / exc.similar_requests,
    # which only vcrpy 9 sets (vcrpy 9 needs Python 3.11; 3.10 gets vcrpy 8).
    request, tape = exc.failed_request, exc.cassette
    similar = tape.find_requests_with_most_matches(request)
    where = f"cassette {path}"
    if not tape.rewound and not len(tape):
        return f"{where} does not exist; record it once with --omnisync-record-mode=once (against a real server)"
    lines = [f"{where} holds no answer for {request.method} {request.path}"]
    if similar and not similar[0][2]:
        lines.append("the matching recorded request was already played: the code now sends it more often than when recorded")
    for _, _, failed in similar[:1]:
        for matcher, message in failed:
            lines.append(f"first difference ({matcher}): {message}")
    if not similar:
        lines.append("nothing recorded has that method and path")
    lines.append("re-record with --omnisync-record-mode=once after deleting the cassette, if the change is intended")
    return "\n".join(lines)
