"""One session's history written into a store by replaying it: its messages appended oldest
first, and at each summary the fold that made it made again; messages an undo left inactive
are made inactive again. What an import (``omnisync.transfer.restore``) and a fork on a store
that cannot copy on its server (``copy_by_replay``) both do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from ..errors import TransferError
from ..messages import INACTIVE, Message
from .base import MemoryStore
from .seq_map import SeqMap

APPEND_BATCH = 500
PLACEHOLDER = Message(role="user", content="", metadata={"omnisync": "import placeholder"})


class SessionReplay:
    """One session's replay: the batch not yet written, the run of inactive messages it ends on, and the seq map.

    Only the trailing run of inactive messages matters to the next summary (its fold covers
    exactly them), so that run is kept as its first and last new seq and its length.
    """

    def __init__(self, store: MemoryStore, agent: str, session_id: str, advance: Callable[[int], None] = lambda count: None) -> None:
        self.store: MemoryStore = store
        self.agent: str = agent
        self.session_id: str = session_id
        self.advance: Callable[[int], None] = advance
        self.pending: list[Message] = []
        self.inactive_first: int = 0
        self.inactive_last: int = 0
        self.inactive_count: int = 0
        self.seqs: SeqMap = SeqMap()
        self.counted: bool = False

    def add(self, message: Message) -> None:
        self.pending.append(message)
        if len(self.pending) >= APPEND_BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        written = self.store.append(self.agent, self.session_id, [fresh(m) for m in self.pending])
        for original, new in zip(self.pending, written):
            self._placed(original, new.seq)  # type: ignore[arg-type]
        self.advance(len(self.pending))
        self.pending = []

    def summary(self, summary: Message) -> None:
        self.flush()
        folded = self.inactive_count
        if folded:
            first, last, delete = self.inactive_first, self.inactive_last, False
        else:  # its originals were deleted: fold one placeholder away, deleting it
            (placeholder,) = self.store.append(self.agent, self.session_id, [PLACEHOLDER])
            first = last = cast(int, placeholder.seq)  # appended, so it has its seq
            delete = True
        written = self.store.fold(
            self.agent,
            self.session_id,
            fresh(summary, folded_range=(first, last)),
            first_seq=first,
            last_seq=last,
            expected_count=folded or 1,
            delete=delete,
        )
        if written is None:
            raise TransferError(
                f"the store refused to restore the summary at seq {summary.seq} of session {self.session_id!r} "
                f"of {self.agent!r} (is something else writing to it?); the session is only partly written"
            )
        self.inactive_count = 0
        self._placed(summary, written.seq)  # type: ignore[arg-type]
        self.advance(1)

    def _placed(self, original: Message, new_seq: int) -> None:
        if original.status == INACTIVE:
            if not self.inactive_count:
                self.inactive_first = new_seq
            self.inactive_last = new_seq
            self.inactive_count += 1
        else:
            self.undone()
        self.seqs.add(original.seq, new_seq)  # type: ignore[arg-type]

    def undone(self) -> None:
        """The inactive messages just written are followed by no summary: an undo left them
        inactive (``agent.undo``), so they are made inactive again, not folded."""
        if self.inactive_count:
            if not self.store.deactivate(
                self.agent, self.session_id, first_seq=self.inactive_first, last_seq=self.inactive_last, expected_count=self.inactive_count
            ):
                raise TransferError(
                    f"the store refused to mark seqs {self.inactive_first}..{self.inactive_last} of session {self.session_id!r} "
                    f"of {self.agent!r} inactive (is something else writing to it?); the session is only partly written"
                )
            self.inactive_count = 0


def fresh(message: Message, folded_range: tuple[int, int] | None = None) -> Message:
    """The message as it goes to ``append``/``fold``: active, with no seq or time of its own."""
    metadata = message.metadata
    info = metadata.get("summary")
    if folded_range is not None and isinstance(info, dict) and ("first_seq" in info or "last_seq" in info):
        metadata = {**metadata, "summary": {**info, "first_seq": folded_range[0], "last_seq": folded_range[1]}}
    # Built directly, not with dataclasses.replace, which cost a third of a copy's time; what is
    # not named here takes Message's defaults (active, no seq, time or session).
    return Message(message.role, message.content, message.tool_calls, message.tool_call_id, message.name, metadata, message.tokens, message.run_id)
