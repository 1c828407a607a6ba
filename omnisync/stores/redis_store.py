"""The Redis store: one sorted set per session read by range, every write one Lua script.

Key layout (``P`` is the prefix, ``OMNISYNC_REDIS_PREFIX`` or ``"omnisync"``; ``A``, ``S``
and ``R`` are the agent, session id and run id as hex of their UTF-8 bytes)::

    P:agents                 set     A of every agent that has sessions     (sessions() of all agents)
    P:a:A:sessions           set     S of this agent's sessions              (sessions(), clear(agent))
    P:a:A:s:S:active         zset    active messages, JSON, score = seq      (the window)
    P:a:A:s:S:inactive       zset    folded messages kept under "keep"       (history only)
    P:a:A:s:S:meta           hash    seq = the counter, last = last write (µs since the epoch)
    P:a:A:runs               zset    R by created_at (µs)                    (list_runs, oldest first)
    P:a:A:run:R              hash    version, data (the record as JSON), status, session, finished (µs)

Why:

- Agent, session and run ids are hex-encoded in key names, so no id can contain ``:``,
  glob characters or ``{}`` hash tags there; nothing ever matches keys by pattern (no KEYS,
  no SCAN MATCH): every key is built from the indexes above. Hex keeps byte order, so the
  run index breaks created_at ties by run id, as the SQL store does.
- A window is one ``ZREVRANGEBYSCORE ... LIMIT 0 n`` on the active set: one round trip, its
  cost O(log N + n). Folded messages move to their own set, so they never slow the window.
- A member is the message's JSON, starting ``{"seq":N,`` (so members never collide); its
  status is where it lives, not a field, so a fold moves members without rewriting them.
- Append, fold, clear and save_run are each one Lua script, so each is atomic: seq comes
  from ``HINCRBY`` on the session's counter inside the write; a fold and a run save are
  compare-and-sets checked in the same script that writes.
- A run record with ``expires_at`` gets ``PEXPIREAT``: Redis itself removes it; the run index
  drops entries whose record has gone when it is next read.

The scripts touch several keys of one agent and the agents set, so this store is for a
single Redis server (with replicas or Sentinel), not Redis Cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any, cast

from .. import _env
from .._logging import logger
from ..errors import ConfigurationError, MissingDependencyError, StoreError
from ..messages import ACTIVE, INACTIVE, Message, utcnow
from ..run_record import FINISHED_STATUSES, RunRecord
from ..store_options import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT
from .base import SEQ_STEP, MemoryStore, SessionInfo, check_serializable, run_conflict

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.exceptions import RedisError
    from redis.retry import Retry
except ImportError as _missing:  # pragma: no cover - exercised by the missing-extra test
    raise MissingDependencyError(
        "Redis memory requires optional dependency 'redis'. Install it with: pip install 'omnisync[redis]'"
    ) from _missing

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_BATCH = 1000  # ZADD arguments per call inside a script (Lua's unpack has a stack limit)

# KEYS: active, inactive, meta, sessions, agents
# ARGV: step, session token, agent token, now (µs), then per message "a" or "i" + its JSON after the "{"
_APPEND = """
local step = tonumber(ARGV[1])
local count = #ARGV - 4
local last = redis.call('HINCRBY', KEYS[3], 'seq', step * count)
local seq = last - step * count
local batches = {{}, {}}
for i = 5, #ARGV do
  seq = seq + step
  local item = ARGV[i]
  local target = (string.sub(item, 1, 1) == 'a') and 1 or 2
  local batch = batches[target]
  batch[#batch + 1] = seq
  batch[#batch + 1] = '{"seq":' .. seq .. ',' .. string.sub(item, 2)
  if #batch >= BATCH then
    redis.call('ZADD', KEYS[target], unpack(batch))
    batches[target] = {}
  end
end
for target = 1, 2 do
  if #batches[target] > 0 then redis.call('ZADD', KEYS[target], unpack(batches[target])) end
end
local previous = redis.call('HGET', KEYS[3], 'last')
if not previous or tonumber(previous) < tonumber(ARGV[4]) then redis.call('HSET', KEYS[3], 'last', ARGV[4]) end
redis.call('SADD', KEYS[4], ARGV[2])
redis.call('SADD', KEYS[5], ARGV[3])
return last
""".replace("BATCH", str(2 * _BATCH))

# KEYS: active, inactive, meta
# ARGV: first seq, last seq, expected count, "1" to delete, summary seq, summary member, now (µs)
_FOLD = """
local expected = tonumber(ARGV[3])
if expected <= 0 or redis.call('ZCOUNT', KEYS[1], ARGV[1], ARGV[2]) ~= expected then return 0 end
if redis.call('ZCOUNT', KEYS[1], ARGV[5], ARGV[5]) + redis.call('ZCOUNT', KEYS[2], ARGV[5], ARGV[5]) > 0 then return 0 end
if ARGV[4] ~= '1' then
  local folded = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[2], 'WITHSCORES')
  local batch = {}
  for i = 1, #folded, 2 do
    batch[#batch + 1] = folded[i + 1]
    batch[#batch + 1] = folded[i]
    if #batch >= BATCH then
      redis.call('ZADD', KEYS[2], unpack(batch))
      batch = {}
    end
  end
  if #batch > 0 then redis.call('ZADD', KEYS[2], unpack(batch)) end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[5], ARGV[6])
local previous = redis.call('HGET', KEYS[3], 'last')
if not previous or tonumber(previous) < tonumber(ARGV[7]) then redis.call('HSET', KEYS[3], 'last', ARGV[7]) end
return 1
""".replace("BATCH", str(2 * _BATCH))

# KEYS: active, inactive, meta, sessions, agents; ARGV: session token, agent token
_CLEAR_SESSION = """
local count = redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HDEL', KEYS[3], 'last')  -- the seq counter stays: seq never goes back
redis.call('SREM', KEYS[4], ARGV[1])
if redis.call('SCARD', KEYS[4]) == 0 then redis.call('SREM', KEYS[5], ARGV[2]) end
return count
"""

# KEYS: sessions, agents; ARGV: this agent's session key stem ("P:a:A:s:"), agent token
_CLEAR_AGENT = """
local count = 0
for _, token in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local stem = ARGV[1] .. token
  count = count + redis.call('ZCARD', stem .. ':active') + redis.call('ZCARD', stem .. ':inactive')
  redis.call('DEL', stem .. ':active', stem .. ':inactive')
  redis.call('HDEL', stem .. ':meta', 'last')
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
return count
"""

# KEYS: agents; ARGV: prefix, then (optionally) one agent token
# Returns agent token, session token, message count, last write (µs or "") per session.
_SESSIONS = """
local agents = {ARGV[2]}
if #ARGV < 2 then agents = redis.call('SMEMBERS', KEYS[1]) end
local found = {}
for _, agent in ipairs(agents) do
  local stem = ARGV[1] .. ':a:' .. agent
  for _, session in ipairs(redis.call('SMEMBERS', stem .. ':sessions')) do
    local keys = stem .. ':s:' .. session
    local count = redis.call('ZCARD', keys .. ':active') + redis.call('ZCARD', keys .. ':inactive')
    if count > 0 then
      found[#found + 1] = agent
      found[#found + 1] = session
      found[#found + 1] = count
      found[#found + 1] = redis.call('HGET', keys .. ':meta', 'last') or ''
    end
  end
end
return found
"""

# KEYS: record, run index
# ARGV: expected version ("" creates), new version, data, status, session, finished (µs or ""),
#       index score, run token, expire at (ms or "")
_SAVE_RUN = """
if ARGV[1] == '' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
elseif redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'data', ARGV[3], 'status', ARGV[4], 'session', ARGV[5], 'finished', ARGV[6])
if ARGV[1] == '' then
  redis.call('ZADD', KEYS[2], ARGV[7], ARGV[8])
else
  redis.call('ZADD', KEYS[2], 'NX', ARGV[7], ARGV[8])
end
if ARGV[9] == '' then redis.call('PERSIST', KEYS[1]) else redis.call('PEXPIREAT', KEYS[1], ARGV[9]) end
return 1
"""

# KEYS: run index; ARGV: record key stem ("P:a:A:run:"), "1" to filter on status, status,
#       "1" to filter on session, session. Drops index entries whose record has expired.
_LIST_RUNS = """
local found = {}
for _, token in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local fields = redis.call('HMGET', ARGV[1] .. token, 'data', 'status', 'session')
  if not fields[1] then
    redis.call('ZREM', KEYS[1], token)
  elseif (ARGV[2] ~= '1' or fields[2] == ARGV[3]) and (ARGV[4] ~= '1' or fields[3] == ARGV[5]) then
    found[#found + 1] = fields[1]
  end
end
return found
"""

# KEYS: run index; ARGV: record key stem, cutoff (µs), then the finished statuses
_PRUNE_RUNS = """
local finished = {}
for i = 3, #ARGV do finished[ARGV[i]] = true end
local cutoff = tonumber(ARGV[2])
local count = 0
for _, token in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local key = ARGV[1] .. token
  local fields = redis.call('HMGET', key, 'status', 'finished')
  if not fields[1] then
    redis.call('ZREM', KEYS[1], token)
  elseif finished[fields[1]] and fields[2] and fields[2] ~= '' and tonumber(fields[2]) < cutoff then
    redis.call('DEL', key)
    redis.call('ZREM', KEYS[1], token)
    count = count + 1
  end
end
return count
"""


class RedisStore(MemoryStore):
    """Messages and runs in one Redis server (``REDIS_URL``).

    Give it a ready ``redis.Redis`` client (the store never closes it), or use
    :meth:`from_url`, whose client the store owns and closes.
    """

    kind = "redis"

    def __init__(self, client: "redis.Redis", *, prefix: str | None = None) -> None:
        prefix = _env.redis_prefix() if prefix is None else prefix
        if not isinstance(prefix, str) or not prefix:
            raise ConfigurationError(f"The Redis key prefix must be a non-empty string, not {prefix!r}.")
        self.client = client
        self.prefix = prefix
        self._owns_client = False
        self._append = client.register_script(_APPEND)
        self._fold = client.register_script(_FOLD)
        self._clear_session = client.register_script(_CLEAR_SESSION)
        self._clear_agent = client.register_script(_CLEAR_AGENT)
        self._sessions = client.register_script(_SESSIONS)
        self._save_run = client.register_script(_SAVE_RUN)
        self._list_runs = client.register_script(_LIST_RUNS)
        self._prune_runs = client.register_script(_PRUNE_RUNS)

    @classmethod
    def from_url(cls, url: str, prefix: str | None = None, **client_options: Any) -> "RedisStore":
        """A store on a new client for ``url`` (``redis://``, ``rediss://``, ``unix://``), closed by :meth:`close`.

        ``client_options`` go to ``redis.Redis.from_url``; ``connect_timeout`` and ``timeout``
        (seconds, 5 and 30 by default) bound a connect and each command, unless the
        client's own ``socket_connect_timeout`` / ``socket_timeout`` are given. Unless one is given, the client
        does not retry a command by itself: a retried script could append the same messages twice.
        """
        client_options.setdefault("retry", Retry(NoBackoff(), 0))
        client_options.setdefault("socket_connect_timeout", client_options.pop("connect_timeout", DEFAULT_CONNECT_TIMEOUT))
        client_options.setdefault("socket_timeout", client_options.pop("timeout", DEFAULT_TIMEOUT))
        client_options.pop("connect_timeout", None)
        client_options.pop("timeout", None)
        try:
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
        return f"{self.prefix}:a:{_token(agent)}"

    def _session_keys(self, agent: str, session_id: str) -> tuple[str, str, str]:
        stem = f"{self._agent_stem(agent)}:s:{_token(session_id)}"
        return f"{stem}:active", f"{stem}:inactive", f"{stem}:meta"

    @property
    def _agents_key(self) -> str:
        return f"{self.prefix}:agents"

    def _describe(self) -> str:
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
        except RedisError as exc:
            where = self._describe()
            logger.debug("%s failed: %s", where, exc)
            raise StoreError(f"{where} failed: {exc.__class__.__name__}: {exc}") from exc

    # --- messages -------------------------------------------------------------------

    def append(self, agent: str, session_id: str, messages: Sequence[Message]) -> list[Message]:
        check_serializable(messages)
        if not messages:
            return []
        now = utcnow()
        active, inactive, meta = self._session_keys(agent, session_id)
        items = [("a" if m.status == ACTIVE else "i") + _body(m, now)[1:] for m in messages]
        keys = [active, inactive, meta, f"{self._agent_stem(agent)}:sessions", self._agents_key]
        with self._errors():
            last = int(self._append(keys=keys, args=[SEQ_STEP, _token(session_id), _token(agent), _micros(now), *items]))
        first = last - SEQ_STEP * (len(messages) - 1)
        return [
            m.placed(agent=agent, session_id=session_id, seq=first + SEQ_STEP * i, created_at=now)
            for i, m in enumerate(messages)
        ]

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
            with self.client.pipeline(transaction=True) as pipe:
                pipe.zrange(active, 0, -1)
                pipe.zrange(inactive, 0, -1)
                kept, folded = pipe.execute()
        stored = [_message(m, agent, session_id, ACTIVE) for m in kept]
        stored += [_message(m, agent, session_id, INACTIVE) for m in folded]
        return sorted(stored, key=lambda m: m.seq)  # type: ignore[arg-type,return-value]

    def clear(self, agent: str, session_id: str | None = None) -> int:
        sessions_key = f"{self._agent_stem(agent)}:sessions"
        with self._errors():
            if session_id is None:
                stem = f"{self._agent_stem(agent)}:s:"
                return int(self._clear_agent(keys=[sessions_key, self._agents_key], args=[stem, _token(agent)]))
            keys = [*self._session_keys(agent, session_id), sessions_key, self._agents_key]
            return int(self._clear_session(keys=keys, args=[_token(session_id), _token(agent)]))

    def sessions(self, agent: str | None = None) -> list[SessionInfo]:
        args = [self.prefix] if agent is None else [self.prefix, _token(agent)]
        with self._errors():
            flat = self._sessions(keys=[self._agents_key], args=args)
        found = [
            SessionInfo(_untoken(flat[i]), _untoken(flat[i + 1]), int(flat[i + 2]), _from_micros(flat[i + 3]))
            for i in range(0, len(flat), 4)
        ]
        return sorted(found, key=lambda info: (info.agent, info.session_id))

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

    # --- runs -----------------------------------------------------------------------

    def save_run(self, record: RunRecord, expected_version: int | None) -> RunRecord:
        saved = record.evolve(version=(expected_version or 0) + 1)
        finished = _micros(saved.finished_at) if saved.finished_at and saved.status in FINISHED_STATUSES else ""
        created = _micros(saved.created_at or utcnow())
        expires = _micros(saved.expires_at) // 1000 if saved.expires_at else ""
        stem = self._agent_stem(saved.agent)
        keys = [f"{stem}:run:{_token(saved.run_id)}", f"{stem}:runs"]
        args: list[Any] = [
            "" if expected_version is None else str(expected_version),
            saved.version,
            saved.to_json(),
            saved.status,
            saved.session_id,
            finished,
            created,
            _token(saved.run_id),
            expires,
        ]
        with self._errors():
            done = int(self._save_run(keys=keys, args=args))
        if done != 1:
            if expected_version is None:
                raise run_conflict(record, expected_version)
            raise run_conflict(record, expected_version)
        return saved

    def load_run(self, agent: str, run_id: str) -> RunRecord | None:
        with self._errors():
            data = self.client.hget(f"{self._agent_stem(agent)}:run:{_token(run_id)}", "data")
        return RunRecord.from_json(data) if data is not None else None

    def list_runs(self, agent: str, status: str | None = None, session_id: str | None = None) -> list[RunRecord]:
        stem = self._agent_stem(agent)
        args = [
            f"{stem}:run:",
            "" if status is None else "1",
            status or "",
            "" if session_id is None else "1",
            session_id or "",
        ]
        with self._errors():
            found = self._list_runs(keys=[f"{stem}:runs"], args=args)
        return [RunRecord.from_json(data) for data in found]

    def prune_runs(self, agent: str, finished_before: datetime) -> int:
        stem = self._agent_stem(agent)
        args: list[Any] = [f"{stem}:run:", _micros(finished_before), *FINISHED_STATUSES]
        with self._errors():
            return int(self._prune_runs(keys=[f"{stem}:runs"], args=args))

    # --- lifecycle ------------------------------------------------------------------

    def close(self) -> None:
        if self._owns_client:
            self.client.close()


# --- helpers ------------------------------------------------------------------------


def _token(text: str) -> str:
    """``text`` as hex of its UTF-8 bytes: safe in a key name, and in the same order."""
    return text.encode("utf-8", "surrogatepass").hex()


def _untoken(token: str | bytes) -> str:
    return bytes.fromhex(_text(token)).decode("utf-8", "surrogatepass")


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
    record = replace(message, created_at=created_at).to_record()
    for name in ("seq", "status", "agent", "session_id"):
        record.pop(name)
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _message(member: str | bytes, agent: str, session_id: str, status: str) -> Message:
    return Message.from_record(json.loads(member), agent=agent, session_id=session_id, status=status)
