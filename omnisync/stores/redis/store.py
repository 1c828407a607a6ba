"""The Redis store: one sorted set per session read by range, every write one Lua script.

Key layout (``P`` is the prefix, ``OMNISYNC_REDIS_PREFIX`` or ``"omnisync"``; ``A``, ``S``
and ``R`` are the agent, session id and run id as hex of their UTF-8 bytes)::

    P:agents                 set     A of every agent that has had sessions  (what its twin must hold)
    P:agents:order           zset    its twin: the same A, every score 0     (pages of all agents' sessions)
    P:a:A:sessions           set     S of every session this agent has had   (clear(agent))
    P:a:A:sessions:order     zset    its twin: the same S, every score 0     (pages of sessions, sessions())
    P:a:A:s:S:active         zset    active messages, JSON, score = seq      (the window)
    P:a:A:s:S:inactive       zset    folded messages kept under "keep"       (history only)
    P:a:A:s:S:meta           hash    seq = the counter, last = last write (µs since the epoch),
                                     listed = 1 once the two sets above hold this session
    P:a:A:runs               zset    R by created_at (µs)                    (list_runs, oldest first)
    P:a:A:run:R              hash    version, data (the record as JSON), status, session, finished (µs)
    P:a:A:run:R:events       list    the run's events, ``[name, data]`` JSON; an event's id is its index + 1

On a Redis Cluster (a ``redis+cluster://`` URL or a ``RedisCluster`` client) the same names
carry hash tags, so that every key one operation touches is in one slot::

    P:{a:A}:sessions   P:{a:A}:sessions:order   P:{a:A}:runs   P:{a:A}:run:R   P:{a:A}:run:R:events
                                              one slot per agent
    P:{a:A:s:S}:active   P:{a:A:s:S}:inactive   P:{a:A:s:S}:meta   one slot per session
    P:agents   P:{P:agents}:order             one slot (the second's tag is the first's whole name)

On one server the names have no braces: they are the names of every earlier release, so
data written before needs no migration (this store has no schema version; the layout is
its contract). A cluster starts empty: copy a single server's data onto it with
``omnisync copy`` (``omnisync/transfer``).

Why:

- Agent, session and run ids are hex-encoded in key names, so no id can contain ``:``,
  glob characters or ``{}`` hash tags there; nothing ever matches keys by pattern (no KEYS,
  no SCAN MATCH): every key is built from the indexes above. Hex keeps byte order, so the
  run index breaks created_at ties by run id, as the SQL store does.
- A window is one ``ZREVRANGEBYSCORE ... LIMIT 0 n`` on the active set: one round trip, its
  cost O(log N + n). Folded messages move to their own set, so they never slow the window.
- A member is the message's JSON, starting ``{"seq":N,`` (so members never collide); its
  status is where it lives, not a field, so a fold moves members without rewriting them.
- Append, fold and clearing a session are each one Lua script on the session's keys, so each
  is atomic: seq comes from ``HINCRBY`` on the session's counter inside the write; a fold is a
  compare-and-set checked in the script that writes. A run's save, list and prune are one
  script each on its agent's keys (a compare-and-set on the record's version).
- A run is three scripts (``load_lease_and_window``, ``save_runs``, ``append_and_save_run``):
  the lease, its holder and the window read together; the lease and the new run record saved
  together (one agent's keys: one slot, also on a cluster); the run's messages and its ending
  written together, the record's version checked before anything is written. The first and
  last touch a session's keys and an agent's, which on a cluster are two slots: there they are
  the plain calls one after the other. The ending's record must carry the seq the script gives
  the run's first message: its JSON is built with a random negative stand-in for
  ``first_written_seq``, which the script replaces (a plain find, not a pattern).
- The agent and session sets are in other slots than the session, so no script writes both.
  They are indexes that may over-list, never under-list: a session is added to them (one
  pipelined script each, which writes the set's sorted twin too, below) *before* its first
  message is written, which the session's ``listed`` flag records; the append script refuses
  to write to a session not yet listed, and the caller lists it and tries again. Nothing
  removes an entry, so no removal can race an append (a clear that drops the entry while
  another process appends would hide that session for good). A cleared session stays listed
  with no messages, as its seq counter stays; ``sessions()`` leaves out sessions with no
  messages. So a session's first append costs two more round trips, every later one none.
- A set has no order, so each listing set has a twin sorted set whose members all score 0:
  ``ZRANGEBYLEX`` reads it in byte order from a cursor (hex of UTF-8 keeps the order of the
  ids, which is Python's order of ``str``), ``O(log N + n)``. A session is listed in both by one
  script on the agent's slot (the agents set and its twin share a slot too), so the twin never
  holds what the set lacks, and equal sizes mean equal members. Sets written before the twins
  existed (or by an earlier release still running) are larger than their twin: the page that
  sees it (``SCARD`` and ``ZCARD`` are read with the page, in one script) first copies the set
  into the twin, ``SSCAN`` a thousand at a time, once; no migration step.
- ``sessions_page`` reads the next ids from the twins, then counts those sessions with one
  script per session, pipelined (one round trip per server), and keeps those with messages.
  A page costs two round trips per agent it reaches (of every agent: one more, to read the
  agents' twin), and more only to pass over cleared sessions (listed, with no messages),
  read ``limit`` at a time. ``sessions()`` is the pages read to the end. ``clear(agent)``
  reads the agent's set, then one script per session, pipelined. Each session is counted or
  cleared atomically; a listing as a whole is not one snapshot, and a session appended to
  while ``clear(agent)`` runs may keep its new messages, as if the append had come after.
- A run record with ``expires_at`` gets ``PEXPIREAT``: Redis itself removes it; the run index
  drops entries whose record has gone when it is next read.
- A run's events are one list next to its record: ``RPUSH`` numbers them (atomic, so two
  appenders never share an id) and ``LRANGE`` reads from a cursor. The record's save and the
  events' append give the list the record's expiry; pruning a run deletes both.
- Keys of one agent's runs share one slot, so one agent's run records live on one master;
  messages, the bulk, spread over the cluster by session.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from itertools import islice
from datetime import datetime, timedelta, timezone
from typing import Any, cast

from ... import _env
from ..._logging import logger
from ...errors import ConfigurationError, MissingDependencyError, StoreError
from ...redact import redact_url
from ...messages import ACTIVE, INACTIVE, Message, utcnow
from ...run_record import FINISHED_STATUSES, RunRecord
from . import scripts
from . import copy as redis_copy
from ..copy_by_replay import refuse_unless_empty
from ..registry import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT
from ..base import (
    MAX_EVENTS_READ,
    SEQ_STEP,
    MemoryStore,
    RunCursor,
    StoredEvent,
    SessionInfo,
    check_events,
    drop_orphan_tool_results,
    events_limit,
    page_limit,
    run_conflict,
)

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.cluster import RedisCluster
    from redis.exceptions import RedisClusterException, RedisError
    from redis.retry import Retry
except ImportError as _missing:  # pragma: no cover - exercised by the missing-extra test
    raise MissingDependencyError(
        "Redis memory requires optional dependency 'redis'. Install it with: pip install 'omnisync[redis]'"
    ) from _missing

CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
CLEAR_BATCH = 1000  # sessions cleared per pipeline by clear(agent)

RUNS_PAGE_SCAN = 1000
EVENT_TRIES = 100  # a sealed append of events, read again after another writer took the next ids
"""The most entries of an agent's run index one script of :meth:`RedisStore.runs_page` reads."""


class RedisStore(MemoryStore):
    """Messages and runs in one Redis server or one Redis Cluster (``REDIS_URL``).

    Give it a ready ``redis.Redis`` or ``redis.cluster.RedisCluster`` client (the store never
    closes it), or use :meth:`from_url`, whose client the store owns and closes.
    """

    kind = "redis"

    def __init__(self, client: "redis.Redis | RedisCluster", *, prefix: str | None = None) -> None:
        prefix = _env.redis_prefix() if prefix is None else prefix
        if not isinstance(prefix, str) or not prefix:
            raise ConfigurationError(f"The Redis key prefix must be a non-empty string, not {prefix!r}.")
        self.cluster: bool = isinstance(client, RedisCluster)
        if self.cluster and ("{" in prefix or "}" in prefix):
            raise ConfigurationError(
                f"On a Redis Cluster the key prefix cannot hold {{ or }} (they would change which slot a key is in): {prefix!r}"
            )
        self.client = client
        self.prefix = prefix
        self._owns_client = False
        self._append = client.register_script(scripts.APPEND)
        self._reserve_seqs = client.register_script(scripts.RESERVE_SEQS)
        self._append_placed = client.register_script(scripts.APPEND_PLACED)
        self._replace_values = client.register_script(scripts.REPLACE_VALUES)
        self._fold = client.register_script(scripts.FOLD)
        self._deactivate = client.register_script(scripts.DEACTIVATE)
        self._history = client.register_script(scripts.HISTORY)
        self._history_page = client.register_script(scripts.HISTORY_PAGE)
        self._save_runs = client.register_script(scripts.SAVE_RUNS)
        self._append_and_save_run = client.register_script(scripts.APPEND_AND_SAVE_RUN)
        self._load_lease_and_window = client.register_script(scripts.LOAD_LEASE_AND_WINDOW)
        self._list_runs = client.register_script(scripts.LIST_RUNS)
        self._runs_page = client.register_script(scripts.RUNS_PAGE)
        self._load_lease = client.register_script(scripts.LOAD_LEASE)
        self._prune_runs = client.register_script(scripts.PRUNE_RUNS)
        self._append_events = client.register_script(scripts.APPEND_EVENTS)
        self._ordered = client.register_script(scripts.ORDERED)

    @property
    def database_system(self) -> str | None:
        return "redis"

    @property
    def writes_run_atomically(self) -> bool:
        # one script checks the version, then writes (on a cluster, two slots: not one script; sealed messages: two scripts)
        return not self.cluster and self.message_seal is None

    @classmethod
    def from_url(cls, url: str, prefix: str | None = None, **client_options: Any) -> "RedisStore":
        """A store on a new client for ``url``, closed by :meth:`close`.

        ``redis://``, ``rediss://`` and ``unix://`` name one server; ``redis+cluster://`` and
        ``rediss+cluster://`` name any node of a Redis Cluster, whose other nodes the client
        finds by itself. ``client_options`` go to ``redis.Redis.from_url`` (or
        ``RedisCluster.from_url``); ``connect_timeout`` and ``timeout`` (seconds, 5 and 30 by
        default) bound a connect and each command, unless the client's own
        ``socket_connect_timeout`` / ``socket_timeout`` are given. Unless one is given, the
        client does not retry a command by itself: a retried script could append the same
        messages twice. (A cluster client still follows MOVED and ASK redirects, which are
        answers, not retries: the command did not run.)
        """
        client_options.setdefault("retry", Retry(NoBackoff(), 0))
        client_options.setdefault("socket_connect_timeout", client_options.pop("connect_timeout", DEFAULT_CONNECT_TIMEOUT))
        client_options.setdefault("socket_timeout", client_options.pop("timeout", DEFAULT_TIMEOUT))
        client_options.pop("connect_timeout", None)
        client_options.pop("timeout", None)
        scheme, _, rest = url.partition("://")
        try:
            if scheme.lower() in CLUSTER_SCHEMES:
                client: redis.Redis | RedisCluster = _cluster_client(f"{scheme.lower().split('+')[0]}://{rest}", client_options)
            else:
                client = redis.Redis.from_url(url, **client_options)
        except ValueError as exc:
            raise ConfigurationError(f"Not a usable Redis URL: {exc}") from exc
        try:
            store = cls(client, prefix=prefix)
        except BaseException:
            client.close()
            raise
        store._owns_client = True
        return store

    # --- keys -----------------------------------------------------------------------

    def _agent_stem(self, agent: str) -> str:
        return self._stem_of_token(_token(agent))

    def _stem_of_token(self, token: str) -> str:
        tag = f"a:{token}"
        return f"{self.prefix}:{{{tag}}}" if self.cluster else f"{self.prefix}:{tag}"

    def _session_keys(self, agent: str, session_id: str) -> tuple[str, str, str]:
        tag = f"a:{_token(agent)}:s:{_token(session_id)}"
        stem = f"{self.prefix}:{{{tag}}}" if self.cluster else f"{self.prefix}:{tag}"
        return f"{stem}:active", f"{stem}:inactive", f"{stem}:meta"

    @property
    def _agents_key(self) -> str:
        return f"{self.prefix}:agents"

    @property
    def _agents_order_key(self) -> str:
        return f"{self.prefix}:{{{self._agents_key}}}:order" if self.cluster else f"{self._agents_key}:order"

    def _sessions_keys(self, agent: str) -> tuple[str, str]:
        """The agent's sessions set and its sorted twin."""
        stem = self._agent_stem(agent)
        return f"{stem}:sessions", f"{stem}:sessions:order"

    def _describe(self) -> str:
        if isinstance(self.client, RedisCluster):
            node = cast(Any, self.client).get_default_node()
            where = f"{node.host}:{node.port}" if node is not None else "?"
            return f"Redis Cluster store redis+cluster://{where}/"
        kwargs = getattr(getattr(self.client, "connection_pool", None), "connection_kwargs", {})
        if "path" in kwargs:
            where = f"unix://{kwargs['path']}"
        else:
            where = f"redis://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
        return f"Redis store {where}/{kwargs.get('db', 0)}"

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except (RedisError, RedisClusterException) as exc:
            where = self._describe()
            logger.debug("%s failed: %s", where, exc)
            raise StoreError(f"{where} failed: {exc.__class__.__name__}: {exc}") from exc

    # --- messages -------------------------------------------------------------------

    def append(self, agent: str, session_id: str, messages: Sequence[Message]) -> list[Message]:
        if not messages:
            return []
        now = utcnow()
        keys = list(self._session_keys(agent, session_id))
        if self.message_seal is not None:
            return self._append_sealed(agent, session_id, messages, keys, now)
        items = [("a" if m.status == ACTIVE else "i") + _body(m, now)[1:] for m in messages]
        with self._errors():
            last = int(self._append(keys=keys, args=[SEQ_STEP, "0", _micros(now), *items]))
            if last < 0:  # the session's first write: list it, then write
                self._list_session(agent, session_id)
                last = int(self._append(keys=keys, args=[SEQ_STEP, "1", _micros(now), *items]))
        return self._placed(messages, agent, session_id, last, now)

    def _append_sealed(self, agent: str, session_id: str, messages: Sequence[Message], keys: list[str], now: datetime) -> list[Message]:
        """Sealed messages carry their seq: reserve the seqs (one script), seal, then write them
        (another). A reader may see a later append's messages before these land."""
        with self._errors():
            last = int(self._reserve_seqs(keys=[keys[2]], args=[SEQ_STEP * len(messages), "0"]))
            if last < 0:  # the session's first write: list it, then reserve
                self._list_session(agent, session_id)
                last = int(self._reserve_seqs(keys=[keys[2]], args=[SEQ_STEP * len(messages), "1"]))
            placed = self._placed(messages, agent, session_id, last, now)
            args: list[Any] = [_micros(now)]
            for message in self.as_stored(placed):
                args += [message.seq, ("a" if message.status == ACTIVE else "i") + _body(message, now)[1:]]
            self._append_placed(keys=keys, args=args)
        return placed

    def replace_values(self, agent: str, session_id: str, messages: Sequence[Message]) -> int:
        """One script per page: each stored member of those seqs replaced by the message with its own
        status and time kept (a fold that moved it meanwhile is found in the other set)."""
        keys = list(self._session_keys(agent, session_id))[:2]
        args: list[Any] = []
        for message in messages:
            body = _body(message, message.created_at or utcnow())
            args += [message.seq, f'{{"seq":{message.seq},{body[1:]}']
        with self._errors():
            return int(self._replace_values(keys=keys, args=args)) if args else 0

    def _list_session(self, agent: str, session_id: str) -> None:
        """The agent and the session in their sets and the sets' sorted twins, one script each."""
        with self.client.pipeline(transaction=False) as pipe:  # EVAL: see _per_session
            pipe.execute_command("EVAL", scripts.LIST, 2, self._agents_key, self._agents_order_key, _token(agent))
            pipe.execute_command("EVAL", scripts.LIST, 2, *self._sessions_keys(agent), _token(session_id))
            pipe.execute()

    @staticmethod
    def _placed(messages: Sequence[Message], agent: str, session_id: str, last: int, now: datetime) -> list[Message]:
        """The messages as written by one append whose last seq is ``last``."""
        first = last - SEQ_STEP * (len(messages) - 1)
        return [m.placed(agent=agent, session_id=session_id, seq=first + SEQ_STEP * i, created_at=now) for i, m in enumerate(messages)]

    def latest(self, agent: str, session_id: str, limit: int, before_seq: int | None = None) -> list[Message]:
        if limit <= 0:
            return []
        active = self._session_keys(agent, session_id)[0]
        highest = "+inf" if before_seq is None else f"({int(before_seq)}"
        with self._errors():
            members = cast("list[bytes]", self.client.zrevrangebyscore(active, highest, "-inf", start=0, num=limit))
        return [_message(member, agent, session_id, ACTIVE) for member in members]

    def history(self, agent: str, session_id: str, include_inactive: bool = False) -> list[Message]:
        active, inactive, _ = self._session_keys(agent, session_id)
        with self._errors():
            if not include_inactive:
                members = cast("list[bytes]", self.client.zrange(active, 0, -1))
                return [_message(member, agent, session_id, ACTIVE) for member in members]
            kept, folded = self._history(keys=[active, inactive])
        stored = [_message(m, agent, session_id, ACTIVE) for m in kept]
        stored += [_message(m, agent, session_id, INACTIVE) for m in folded]
        return sorted(stored, key=lambda m: m.seq)  # type: ignore[arg-type,return-value]

    def history_page(
        self, agent: str, session_id: str, after_seq: int | None, limit: int, include_inactive: bool = False
    ) -> list[Message]:
        """Active only: one ZRANGEBYSCORE. With inactive: one script reading both sets (one slot)."""
        if limit <= 0:
            return []
        active, inactive, _ = self._session_keys(agent, session_id)
        lowest = "-inf" if after_seq is None else f"({int(after_seq)}"
        with self._errors():
            if not include_inactive:
                members = cast("list[bytes]", self.client.zrangebyscore(active, lowest, "+inf", start=0, num=limit))
                return [_message(member, agent, session_id, ACTIVE) for member in members]
            kept, folded = self._history_page(keys=[active, inactive], args=[lowest, limit])
        stored = [_message(m, agent, session_id, ACTIVE) for m in kept]
        stored += [_message(m, agent, session_id, INACTIVE) for m in folded]
        stored.sort(key=lambda m: m.seq)  # type: ignore[arg-type,return-value]
        return stored[:limit]

    def delete_message(self, agent: str, session_id: str, seq: int) -> bool:
        active, inactive, _ = self._session_keys(agent, session_id)
        with self._errors():
            removed = cast(Any, self.client).execute_command("EVAL", scripts.DELETE_MESSAGE, 2, active, inactive, seq)
        return int(removed) > 0  # the seq counter (in meta) stays

    def clear(self, agent: str, session_id: str | None = None) -> int:
        with self._errors():
            if session_id is not None:
                return int(cast(Any, self.client).execute_command("EVAL", scripts.CLEAR_SESSION, 3, *self._session_keys(agent, session_id)))
            deleted = 0
            listed = iter(self.client.sscan_iter(f"{self._agent_stem(agent)}:sessions", count=CLEAR_BATCH))
            while batch := list(islice(listed, CLEAR_BATCH)):  # a bounded batch at a time, not the whole set
                deleted += sum(int(count) for count in self._per_session(scripts.CLEAR_SESSION, [(agent, _untoken(token)) for token in batch]))
        return deleted

    def sessions_page(self, agent: str | None, after: tuple[str, str] | None, limit: int) -> list[SessionInfo]:
        """The next ids from the sorted twins, counted (see the module docstring)."""
        limit = page_limit(limit)
        with self._errors():
            if agent is not None:
                past = after is not None and after[0] > agent  # hex of UTF-8 keeps Python's order
                return [] if past else self._agent_page(agent, _after_in(agent, after), limit)
            found: list[SessionInfo] = []
            lowest = "-" if after is None else f"[{_token(after[0])}"
            while len(found) < limit:
                want = limit - len(found)
                tokens = self._ordered_page(self._agents_key, self._agents_order_key, lowest, want)
                for token in tokens:  # none before the cursor's agent
                    name = _untoken(token)
                    found += self._agent_page(name, _after_in(name, after), limit - len(found))
                    if len(found) == limit:
                        return found
                if len(tokens) < want:
                    return found
                lowest = f"({_text(tokens[-1])}"
            return found

    def _agent_page(self, agent: str, after: str | None, limit: int) -> list[SessionInfo]:
        """Up to ``limit`` sessions of ``agent`` with messages, after the session id ``after``."""
        found: list[SessionInfo] = []
        lowest = "-" if after is None else f"({_token(after)}"
        while len(found) < limit:
            want = limit - len(found)
            tokens = self._ordered_page(*self._sessions_keys(agent), lowest, want)
            pairs = [(agent, _untoken(token)) for token in tokens]
            counts = self._per_session(scripts.COUNT_SESSION, pairs)
            found += [
                SessionInfo(name, session_id, int(count), _from_micros(last))
                for (name, session_id), (count, last) in zip(pairs, counts)
                if int(count) > 0
            ]
            if len(tokens) < want:
                break
            lowest = f"({_text(tokens[-1])}"
        return found

    def _ordered_page(self, listing: str, order: str, lowest: str, count: int) -> list[str | bytes]:
        """The next ``count`` members of ``listing``'s sorted twin from ``lowest``; a twin that
        lacks members of its set (one listed before twins existed) is filled first."""
        missing, tokens = self._ordered(keys=[listing, order], args=[lowest, count])
        if int(missing) > 0:
            for chunk in _chunks(self.client.sscan_iter(listing, count=scripts.BATCH), scripts.BATCH):
                self.client.zadd(order, dict.fromkeys(chunk, 0))
            _, tokens = self._ordered(keys=[listing, order], args=[lowest, count])
        return cast("list[str | bytes]", tokens)

    def _per_session(self, script: str, pairs: list[tuple[str, str]]) -> list[Any]:
        """``script`` on each session's keys, pipelined: one round trip per server, not per session.

        EVAL, not EVALSHA: a cluster pipeline cannot load a script a node is missing."""
        if not pairs:
            return []
        with self.client.pipeline(transaction=False) as pipe:
            for agent, session_id in pairs:
                pipe.execute_command("EVAL", script, 3, *self._session_keys(agent, session_id))
            return cast("list[Any]", pipe.execute())

    def fold(
        self,
        agent: str,
        session_id: str,
        summary: Message,
        *,
        first_seq: int,
        last_seq: int,
        expected_count: int,
        delete: bool,
    ) -> Message | None:
        written = summary.placed(agent=agent, session_id=session_id, seq=last_seq + 1, created_at=utcnow())
        written = replace(written, status=ACTIVE)
        member = _body(written, written.created_at)  # type: ignore[arg-type]
        member = f'{{"seq":{written.seq},{member[1:]}'
        args: list[Any] = [first_seq, last_seq, expected_count, "1" if delete else "0", written.seq, member, _micros(written.created_at)]  # type: ignore[arg-type]
        with self._errors():
            done = self._fold(keys=list(self._session_keys(agent, session_id)), args=args)
        return written if int(done) == 1 else None

    def copy_session(self, agent: str, source_session_id: str, target_session_id: str, *, last_seq: int) -> int:
        """The source's members copied as they are, both sets read at one moment (redis_copy.py)."""
        refuse_unless_empty(self, agent, target_session_id)
        return redis_copy.copy_members(self, agent, source_session_id, target_session_id, last_seq, _micros(utcnow()))

    def deactivate(self, agent: str, session_id: str, *, first_seq: int, last_seq: int, expected_count: int) -> bool:
        """One script on the session's keys (``redis_lua/deactivate.lua``): the range's members move to the inactive set."""
        with self._errors():
            done = self._deactivate(keys=list(self._session_keys(agent, session_id)), args=[first_seq, last_seq, expected_count])
        return int(done) == 1

    # --- runs -----------------------------------------------------------------------

    def save_run(self, record: RunRecord, expected_version: int | None) -> RunRecord:
        return self.save_runs([(record, expected_version)])[0]

    def save_runs(self, saves: Sequence[tuple[RunRecord, int | None]]) -> list[RunRecord]:
        """One script: every version checked, then all written (one agent's records share a slot)."""
        if len({record.agent for record, _ in saves}) > 1:
            raise ValueError("save_runs saves the records of one agent")
        keys: list[str] = []
        args: list[Any] = []
        saved = []
        for record, expected_version in saves:
            new, record_keys, record_args = self._save_of(record, expected_version)
            saved.append(new)
            keys += record_keys
            args += record_args
        with self._errors():
            unfit = int(self._save_runs(keys=keys, args=args))
        if unfit:
            raise run_conflict(*saves[unfit - 1])
        return saved

    def _save_of(self, record: RunRecord, expected_version: int | None, first_seq_marker: int | None = None) -> tuple[RunRecord, list[str], list[Any]]:
        """The record as saved, and the keys and arguments of its save in a script (redis_lua/save_functions.lua).

        With ``first_seq_marker``, its data holds that number as ``first_written_seq``, for the script to replace."""
        saved = record.evolve(version=(expected_version or 0) + 1)
        data = saved.to_json() if first_seq_marker is None else saved.evolve(first_written_seq=first_seq_marker).to_json()
        finished = _micros(saved.finished_at) if saved.finished_at and saved.status in FINISHED_STATUSES else ""
        created = _micros(saved.created_at or utcnow())
        expires = _micros(saved.expires_at) // 1000 if saved.expires_at else ""
        stem = self._agent_stem(saved.agent)
        record_key = f"{stem}:run:{_token(saved.run_id)}"
        args: list[Any] = [
            "" if expected_version is None else str(expected_version),
            saved.version,
            data,
            saved.status,
            saved.session_id,
            finished,
            created,
            _token(saved.run_id),
            expires,
        ]
        return saved, [record_key, f"{stem}:runs", f"{record_key}:events"], args

    def append_and_save_run(
        self, agent: str, session_id: str, messages: Sequence[Message], record: RunRecord, expected_version: int | None
    ) -> tuple[list[Message], RunRecord]:
        """On one server, one script: the record's version checked, then the messages and the
        record written together. On a cluster the two are in different slots: one after the other."""
        if not self.writes_run_atomically or not messages:
            return super().append_and_save_run(agent, session_id, messages, record, expected_version)
        stand_in = -1 - secrets.randbelow(10**12) if record.first_written_seq is None else None
        marker = f'"first_written_seq":{stand_in}' if stand_in is not None else ""  # the script writes the seq it gives the first message there
        saved, record_keys, record_args = self._save_of(record, expected_version, stand_in)
        now = utcnow()
        items = [("a" if m.status == ACTIVE else "i") + _body(m, now)[1:] for m in messages]
        keys = [*self._session_keys(agent, session_id), *record_keys]
        with self._errors():
            last = int(self._append_and_save_run(keys=keys, args=[*record_args, marker, SEQ_STEP, "0", _micros(now), *items]))
            if last == -1:  # the session's first write: list it, then write
                self._list_session(agent, session_id)
                last = int(self._append_and_save_run(keys=keys, args=[*record_args, marker, SEQ_STEP, "1", _micros(now), *items]))
        if last == -2:
            raise run_conflict(record, expected_version)
        written = self._placed(messages, agent, session_id, last, now)
        if marker:
            saved = saved.evolve(first_written_seq=written[0].seq)
        return written, saved

    def load_lease_and_window(
        self, agent: str, lease_id: str, session_id: str, *, max_messages: int | None = None, max_tokens: int | None = None
    ) -> tuple[RunRecord | None, RunRecord | None, list[Message]]:
        """On one server, for a window by messages, one script (a token window may read several pages)."""
        if self.cluster or max_tokens is not None or max_messages is None:
            return super().load_lease_and_window(agent, lease_id, session_id, max_messages=max_messages, max_tokens=max_tokens)
        stem = self._agent_stem(agent)
        keys = [f"{stem}:run:{_token(lease_id)}", self._session_keys(agent, session_id)[0]]
        with self._errors():
            lease, holder, members = self._load_lease_and_window(keys=keys, args=[f"{stem}:run:", max(max_messages, 0)])
        newest_first = [_message(member, agent, session_id, ACTIVE) for member in members]
        return (
            RunRecord.from_json(lease) if lease is not None else None,
            RunRecord.from_json(holder) if holder is not None else None,
            drop_orphan_tool_results(list(reversed(newest_first))),
        )

    def load_run(self, agent: str, run_id: str) -> RunRecord | None:
        with self._errors():
            data = self.client.hget(f"{self._agent_stem(agent)}:run:{_token(run_id)}", "data")
        return RunRecord.from_json(data) if data is not None else None

    def load_lease(self, agent: str, run_id: str) -> tuple[RunRecord | None, RunRecord | None]:
        """One script: the lease, and the run its JSON names as holder (a run record of the same agent, so the same slot)."""
        stem = self._agent_stem(agent)
        with self._errors():
            lease, holder = self._load_lease(keys=[f"{stem}:run:{_token(run_id)}"], args=[f"{stem}:run:"])
        return (
            RunRecord.from_json(lease) if lease is not None else None,
            RunRecord.from_json(holder) if holder is not None else None,
        )

    def list_runs(self, agent: str, status: str | None = None, session_id: str | None = None) -> list[RunRecord]:
        stem = self._agent_stem(agent)
        args = [f"{stem}:run:", *_filter(status), *_filter(session_id)]
        with self._errors():
            found = self._list_runs(keys=[f"{stem}:runs"], args=args)
        return [RunRecord.from_json(data) for data in found]

    def _page_of_runs(
        self, agent: str, after: RunCursor | None, limit: int, status: str | None, session_id: str | None, kind: str
    ) -> list[RunRecord]:
        """One script per RUNS_PAGE_SCAN entries of the agent's run index read from the cursor:
        a page whose runs are far apart (one status among many others, or one session's) takes
        a script for each of those steps, each of bounded cost. Leases and claims are in the
        index too, and are read and skipped (:data:`RUNS_PAGE_SCAN`)."""
        stem = self._agent_stem(agent)
        score, token = ("", "") if after is None else (str(_micros(after[0])), _token(after[1]))
        found: list[RunRecord] = []
        while True:
            args: list[str | int] = [f"{stem}:run:", score, token, limit - len(found), RUNS_PAGE_SCAN, kind, *_filter(status), *_filter(session_id)]
            with self._errors():
                data, last_score, last_token, more = self._runs_page(keys=[f"{stem}:runs"], args=args)
            found += [RunRecord.from_json(d) for d in data]
            if len(found) == limit or not more or not last_token:
                return found
            score, token = _text(last_score), _text(last_token)

    def run_agents(self) -> list[str]:
        """A SCAN for the agents' run sets (``P:a:A:runs``), on every node of a cluster."""
        start, _, end = self._stem_of_token("\0").rpartition("\0")
        pattern = f"{glob_escaped(start)}*{glob_escaped(end)}:runs"
        with self._errors():
            keys = {_text(key) for key in self.client.scan_iter(match=pattern, count=1000)}
        tokens = {key[len(start) : -len(end + ":runs")] for key in keys}
        return sorted(_untoken(token) for token in tokens if _is_hex(token))

    def prune_runs(self, agent: str, finished_before: datetime) -> int:
        stem = self._agent_stem(agent)
        args: list[Any] = [f"{stem}:run:", _micros(finished_before), *FINISHED_STATUSES]
        with self._errors():
            return int(self._prune_runs(keys=[f"{stem}:runs"], args=args))

    # --- a run's events -------------------------------------------------------------

    def append_events(self, agent: str, run_id: str, events: Sequence[tuple[str, dict[str, Any]]]) -> int:
        checked = check_events(events)
        record = f"{self._agent_stem(agent)}:run:{_token(run_id)}"
        with self._errors():
            if not checked:
                return int(self.client.llen(f"{record}:events"))
            if self.event_seal is not None:
                return self._append_sealed_events(agent, run_id, record, events, checked)
            items = [f"[{json.dumps(name)},{data}]" for name, data in checked]
            return int(self._append_events(keys=[f"{record}:events", record], args=["", *items]))

    def _append_sealed_events(
        self, agent: str, run_id: str, record: str, events: Sequence[tuple[str, dict[str, Any]]], checked: list[tuple[str, str]]
    ) -> int:
        """Sealed events carry their ids: read the run's count, seal, and append only if the count
        is still that (one script); another writer in between: read again."""
        for _ in range(EVENT_TRIES):
            last = int(self.client.llen(f"{record}:events"))
            items = [f"[{json.dumps(name)},{data}]" for name, data in self.events_as_stored(agent, run_id, last + 1, events, checked)]
            appended = int(self._append_events(keys=[f"{record}:events", record], args=[last, *items]))
            if appended >= 0:
                return appended
        raise StoreError(f"events of run {run_id!r} were not appended: other writers took the next ids {EVENT_TRIES} times")

    def replace_events(self, agent: str, run_id: str, events: Sequence[StoredEvent]) -> int:
        key, found = f"{self._agent_stem(agent)}:run:{_token(run_id)}:events", 0
        with self._errors():
            held = int(self.client.llen(key))
            for event in (e for e in events if 0 < e.id <= held):
                self.client.lset(key, event.id - 1, f"[{json.dumps(event.name)},{json.dumps(event.data, ensure_ascii=False, separators=(',', ':'))}]")
                found += 1
        return found

    def read_events(self, agent: str, run_id: str, after: int = 0, limit: int = MAX_EVENTS_READ) -> list[StoredEvent]:
        limit = events_limit(after, limit)
        with self._errors():
            items = cast("list[bytes]", self.client.lrange(f"{self._agent_stem(agent)}:run:{_token(run_id)}:events", after, after + limit - 1))
        return [StoredEvent(after + i, *json.loads(item)) for i, item in enumerate(items, 1)]

    # --- lifecycle ------------------------------------------------------------------

    def close(self) -> None:
        if self._owns_client:
            self.client.close()


# --- helpers ------------------------------------------------------------------------


def _cluster_client(url: str, options: dict[str, Any]) -> "RedisCluster":
    """A cluster client for ``url``; one that cannot reach the cluster is a StoreError now."""
    if int(redis.__version__.split(".")[0]) < 6:  # before 6.0 the cluster client retried by its own count
        options.setdefault("cluster_error_retry_attempts", 0)
    try:
        return RedisCluster.from_url(url, **options)
    except (RedisError, RedisClusterException) as exc:
        raise StoreError(f"Redis Cluster store {redact_url(url)} cannot be reached: {exc.__class__.__name__}: {exc}") from exc


def _after_in(agent: str, after: tuple[str, str] | None) -> str | None:
    """The session id the cursor ``after`` leaves ``agent``'s sessions at (None: at their start),
    for an agent that is not before the cursor's."""
    return after[1] if after is not None and after[0] == agent else None


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _token(text: str) -> str:
    """``text`` as hex of its UTF-8 bytes: safe in a key name, and in the same order."""
    return text.encode("utf-8", "surrogatepass").hex()


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def glob_escaped(text: str) -> str:
    """``text`` matched literally by SCAN's MATCH."""
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def _untoken(token: str | bytes) -> str:
    return bytes.fromhex(_text(token)).decode("utf-8", "surrogatepass")


def _filter(value: str | None) -> tuple[str, str]:
    """A script's filter arguments: whether to filter, and on what."""
    return ("", "") if value is None else ("1", value)


def _text(value: str | bytes) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _micros(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _from_micros(value: str | bytes) -> datetime | None:
    text = _text(value)
    return _EPOCH + timedelta(microseconds=int(text)) if text else None


def _body(message: Message, created_at: datetime) -> str:
    """The message's JSON without seq, status, agent and session: the key and the set say those."""
    record = message.to_record()  # not of a replace()d copy: that cost as much as the JSON
    record["created_at"] = created_at.isoformat()
    for name in ("seq", "status", "agent", "session_id"):
        record.pop(name)
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _message(member: str | bytes, agent: str, session_id: str, status: str) -> Message:
    return Message.from_record(json.loads(member), agent=agent, session_id=session_id, status=status)
