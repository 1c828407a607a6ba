"""Writing an export back into a store, through the public store interface only.

``append`` numbers messages itself and ``fold`` is the only way a message becomes inactive, so
a session is restored by replaying its history: its messages are appended oldest first, all
active, and at each summary the fold that made it is made again. The fold covers the messages
the export has as inactive that come just before the summary (an earlier summary among them),
so they end up inactive and the summary lands right after them, where it stood. A summary whose
originals were deleted (``retention_policy="delete"``) has nothing left to fold: it is folded
over one placeholder message with ``delete=True``, which the same write removes.

What comes out: the same messages in the same order, with the same statuses, roles, contents,
tool calls, metadata, token counts and run ids, and the same summaries. What does not:

- ``seq``: the store assigns it. A session restored into a store that never held it gets the
  same numbers when the source had no gaps (no deleted originals, never cleared); otherwise
  they are renumbered in the same order. A summary's ``first_seq``/``last_seq`` then name the
  range its fold covered in the new store, and a run record's ``first_written_seq`` and
  ``loaded_seq`` are moved to the new numbers of the same messages.
- ``created_at``: the store stamps a message when it writes it (so a copy's last activity is
  the time of the copy).

Run records keep everything, their ``version`` included: after the create, the record is saved
again (compare-and-set) until its version matches. One with no ``created_at`` (omnisync writes
none; an export file written by hand may hold one) gets its ``updated_at``, or the time of the
restore, so that pages of records (``MemoryStore.iter_records``) list it and a later export or
copy carries it. A run record that has already expired is
skipped (the store would drop it anyway). A run's stored events follow its record, with the
same ids (a new record has none, so they take 1, 2, 3... again); the events of a run that was
skipped (expired, or already there with ``append``) are skipped with it.
"""

from __future__ import annotations

from collections.abc import Iterable, KeysView
from dataclasses import dataclass, field
from typing import Any

from .. import run_state
from ..messages import Message, utcnow
from ..run_record import RunRecord
from ..stores.base import MemoryStore
from ..errors import TransferError
from .progress import NoProgress, Progress
from .records import Counts, EventBatch, RunKey
from ..stores.seq_map import SeqMap
from ..stores.session_replay import SessionReplay

_SHOWN = 5

Key = tuple[str, str]


@dataclass
class Report:
    """What a restore wrote, and what the end-of-copy check found."""

    sessions: int = 0
    written: Counts = field(default_factory=Counts)
    runs: int = 0
    runs_already_there: int = 0
    runs_expired: int = 0
    events: int = 0

    def describe(self) -> str:
        text = f"{self.sessions} sessions, {self.written.describe()}, {self.runs} run records"
        if self.events:
            text += f" with {self.events} stored events"
        if self.runs_already_there:
            text += f" ({self.runs_already_there} already there, left as they were)"
        if self.runs_expired:
            text += f" ({self.runs_expired} expired, skipped)"
        return text


class Restorer:
    """Restores sessions and run records into ``store``; call :meth:`verify` at the end."""

    def __init__(self, store: MemoryStore, *, append: bool, progress: Progress | None = None) -> None:
        self.store = store
        self.append = append
        self.progress: Progress | NoProgress = progress or NoProgress()
        self.report: Report = Report()
        self._expected: dict[Key, Counts] = {}
        self._seqs: dict[Key, SeqMap] = {}
        self._written_runs: dict[RunKey, int] = {}  # the version each was written at: never the records
        self._events_written: dict[RunKey, int] = {}
        self._replays: dict[Key, SessionReplay] = {}
        self.started: bool = False
        """Whether anything has been written (a failure after that leaves the destination partly written)."""

    # --- refusing to duplicate ------------------------------------------------------

    def check_free(self, sessions: Iterable[Key], runs: Iterable[RunRecord]) -> int:
        """Refuse, before anything is written, if the store already holds a session or run (unless
        appending); return how many runs there are, for the progress bar, each read once and none
        kept. Appending with nobody watching the progress reads none of them and returns 0."""
        wanted = list(dict.fromkeys(sessions))
        asked, held = set(wanted), set[Key]()  # the store's sessions are read a page at a time, and only those asked for kept
        for agent in dict.fromkeys(a for a, _ in wanted):
            held.update(key for key in ((s.agent, s.session_id) for s in self.store.iter_sessions(agent)) if key in asked)
        taken = [key for key in wanted if key in held]
        if self.append:
            for key in taken:
                self._expected[key] = Counts.of(self.store.iter_history(*key, include_inactive=True))
            return 0 if isinstance(self.progress, NoProgress) else sum(1 for _ in runs)
        if taken:
            names = ", ".join(f"{s!r} of {a!r}" for a, s in taken[:_SHOWN]) + (" ..." if len(taken) > _SHOWN else "")
            raise TransferError(
                f"the destination already holds {len(taken)} of these sessions ({names}); nothing was written. "
                "Pass append=True (--append on the command line) to add the messages after the ones it holds."
            )
        count, clashing, shown = 0, 0, list[str]()
        for record in runs:
            count += 1
            if self.store.load_run(record.agent, record.run_id) is not None:
                clashing += 1
                if len(shown) < _SHOWN:
                    shown.append(record.run_id)
        if clashing:
            names = ", ".join(shown) + (" ..." if clashing > _SHOWN else "")
            raise TransferError(
                f"the destination already holds {clashing} of these run records ({names}); nothing was written. "
                "Pass append=True (--append on the command line) to keep the ones it holds and add the rest."
            )
        return count

    # --- sessions -------------------------------------------------------------------

    def session(self, agent: str, session_id: str, messages: Iterable[Message]) -> None:
        """Replay one session's history (see the module docstring), oldest first, as ``messages`` yields it.

        Holds one batch of messages at a time. Called again for the same session (an export
        whose sessions interleave), it carries on where the last call stopped.
        """
        key = (agent, session_id)
        self.started = True
        replay = self._replays.get(key)
        if replay is None:
            replay = self._replays[key] = SessionReplay(self.store, agent, session_id, self.progress.advance)
            self._seqs[key] = replay.seqs
        counted = Counts()
        for message in messages:
            counted = counted + Counts.of((message,))
            if message.is_summary:
                replay.summary(message)
            else:
                replay.add(message)
        replay.flush()
        self._expected[key] = self._expected.get(key, Counts()) + counted
        if not replay.counted:
            replay.counted = True
            self.report.sessions += 1
        self.report.written = self.report.written + counted

    # --- runs -----------------------------------------------------------------------

    def runs(self, records: Iterable[RunRecord]) -> None:
        now = utcnow()
        for record in records:
            if record.expires_at is not None and record.expires_at <= now:
                self.report.runs_expired += 1
                self.progress.advance()
                continue
            if self.append and self.store.load_run(record.agent, record.run_id) is not None:
                self.report.runs_already_there += 1
                self.progress.advance()
                continue
            moved = self._renumbered(record if record.created_at is not None else record.evolve(created_at=record.updated_at or now))
            self.started = True
            saved = run_state.restore(self.store, moved, record.version)
            self._written_runs[saved.agent, saved.run_id] = saved.version
            self.report.runs += 1
            self.progress.advance()

    @property
    def written_runs(self) -> KeysView[RunKey]:
        """(agent, run_id) of the run records this restore wrote, in order."""
        return self._written_runs.keys()

    def events(self, batches: Iterable[EventBatch]) -> None:
        """Append each batch to its run, if this restore wrote that run's record; ids must run on from 1."""
        for agent, run_id, first, events in batches:
            key = (agent, run_id)
            if key not in self._written_runs:
                continue
            held = self._events_written.get(key, 0)
            if first != held + 1:
                raise TransferError(f"the events of run {run_id!r} come starting at id {first} after {held} of them were written")
            last = self.store.append_events(agent, run_id, events)
            if last != held + len(events):
                raise TransferError(f"run {run_id!r} of {agent!r} got event ids up to {last}, not {held + len(events)}: something else wrote events to it")
            self._events_written[key] = last
            self.report.events += len(events)

    def _renumbered(self, record: RunRecord) -> RunRecord:
        seqs = self._seqs.get((record.agent, record.session_id))
        if seqs is None:
            return record
        changes: dict[str, Any] = {}
        if record.first_written_seq is not None:
            changes["first_written_seq"] = seqs.new_seq(record.first_written_seq, up=True)
        if record.loaded_seq is not None:
            low, high = record.loaded_seq
            changes["loaded_seq"] = (seqs.new_seq(low, up=True), seqs.new_seq(high, up=False))
        return record.evolve(**changes)

    # --- the check at the end -------------------------------------------------------

    def verify(self) -> Report:
        """Count what the store holds now against what was meant to be there; raise if they differ."""
        for replay in self._replays.values():
            replay.undone()
        wrong = []
        for (agent, session_id), expected in self._expected.items():
            found = Counts.of(self.store.iter_history(agent, session_id, include_inactive=True))
            if found != expected:
                wrong.append(f"session {session_id!r} of {agent!r}: expected {expected.describe()}, found {found.describe()}")
        for (agent, run_id), version in self._written_runs.items():
            stored = self.store.load_run(agent, run_id)
            if stored is None or stored.version != version:
                wrong.append(f"run {run_id} of {agent!r}: not stored at version {version}")
        for (agent, run_id), count in self._events_written.items():
            last = self.store.append_events(agent, run_id, [])  # appends nothing: the id of its last event
            if last != count:
                wrong.append(f"run {run_id} of {agent!r}: expected {count} stored events, found {last}")
        if wrong:
            shown = "; ".join(wrong[:_SHOWN]) + (f"; and {len(wrong) - _SHOWN} more" if len(wrong) > _SHOWN else "")
            raise TransferError(f"the counts differ after writing: {shown}")
        return self.report
