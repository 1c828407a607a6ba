"""What every class of omnisync.aio shares: it holds one blocking instance and forwards to it.

omnisync/aio.py itself is generated source (scripts/generate_aio.py): one coroutine method per
public method of the blocking class, each calling :meth:`AsyncTwin._call` here, which runs the
blocking method in omnisync.aio's thread pool. Arguments that are twins are unwrapped to their
blocking objects, and results that are blocking objects come back as their twins (the same
twin each time while it lives).
"""

from __future__ import annotations

import weakref
from typing import Any, ClassVar

from ._aio_pool import call as _in_thread
from .aio_stream import AsyncAgentStream

_TWIN_CLASSES: dict[type, type[AsyncTwin]] = {}  # blocking class -> its twin class
_LIVE_TWINS: weakref.WeakValueDictionary[int, AsyncTwin] = weakref.WeakValueDictionary()  # id(blocking) -> twin


def unwrap(value: Any) -> Any:
    """The blocking object behind a twin, so an aio router can be passed where a router goes."""
    return value._blocking if isinstance(value, AsyncTwin) else value


def twin_of(value: Any) -> Any:
    """The twin of a blocking object (the same one each time while it lives); other values as they are."""
    for klass in type(value).__mro__:
        twin_class = _TWIN_CLASSES.get(klass)
        if twin_class is not None:
            twin = _LIVE_TWINS.get(id(value))
            return twin if twin is not None and twin._blocking is value else twin_class._wrap(value)
    return value


class AsyncTwin:
    """Base of omnisync.aio's classes: holds the blocking instance and forwards to it."""

    _blocking_class: ClassVar[type]
    _blocking: Any

    def __init_subclass__(cls, blocking: type, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._blocking_class = blocking
        _TWIN_CLASSES[blocking] = cls

    @classmethod
    def _wrap(cls, instance: Any) -> Any:
        twin = cls.__new__(cls)
        twin._adopt(instance)
        return twin

    def _adopt(self, instance: Any) -> None:
        object.__setattr__(self, "_blocking", instance)
        _LIVE_TWINS[id(instance)] = self

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The blocking method ``name`` run in a worker thread; looked up per call, so a patched one is the one run."""
        call = getattr(self._blocking, name)
        return twin_of(await _in_thread(call, *(unwrap(a) for a in args), **{k: unwrap(v) for k, v in kwargs.items()}))

    def _stream(self, name: str, *args: Any, **kwargs: Any) -> AsyncAgentStream:
        """The blocking stream method ``name``'s stream, iterated asynchronously (made at once, as the blocking one is)."""
        call = getattr(self._blocking, name)
        return AsyncAgentStream(call(*(unwrap(a) for a in args), **{k: unwrap(v) for k, v in kwargs.items()}))

    # Attributes the blocking object sets on itself (``name``, ``config``...) read and write through.
    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return twin_of(getattr(self._blocking, name))

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._blocking, name, unwrap(value))

    def __dir__(self) -> list[str]:
        public = (n for n in dir(self._blocking) if not n.startswith("_"))
        return sorted(set(super().__dir__()) | set(public))

    def __repr__(self) -> str:
        return f"aio.{self._blocking!r}"
