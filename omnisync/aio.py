"""omnisync.aio: the same agent and router, awaitable.

    from omnisync.aio import MemoryRouter, OmniCoreAgent

    agent = OmniCoreAgent(name="assistant", system_instruction="...", model_config={...})
    result = await agent.run("hello", session_id="user_123")

Each class here drives one instance of its blocking twin in ``omnisync``: the constructor
takes the same arguments and builds that instance (synchronously), and every public method
of the blocking class becomes a coroutine method that runs the blocking one in a worker
thread of omnisync.aio's own pool, sized for calls that wait on the network (64 threads;
``OMNISYNC_AIO_THREADS`` or ``set_thread_count`` changes it). The twins are generated from
the blocking classes, so a method added there is awaitable here at once. Properties and attributes stay plain, errors
are the very classes ``omnisync`` raises, and ``async with`` releases what ``with`` would.

This is a thin layer over the blocking API, which never needs an event loop: call it from
plain scripts, from threads, or from inside a running loop (as in Jupyter), where it simply
blocks that loop while it works. Cancelling a task that awaits a method does not stop the
blocking call; it finishes in its thread.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

from ._aio_pool import call as _in_thread
from ._aio_pool import set_thread_count, thread_count
from .agent import OmniCoreAgent as _BlockingAgent
from .aio_stream import AsyncAgentStream
from .content import ContentPart, UserContent
from .encryption.keys import Encryption
from .errors import ConfigurationError, DecryptionError, MissingDependencyError, ModelError, OmnisyncError, RunError, StoreError
from .results import (
    ApprovalRequest,
    BudgetRequest,
    ChatMessage,
    HistoryMessage,
    HistoryPage,
    ModelCallUsage,
    Preview,
    PreviewWindow,
    RunRecordDict,
    RunResult,
    RunsPage,
    SessionUsage,
    Usage,
)
from .remote import RemoteAgent as _BlockingRemoteAgent
from .router import MemoryRouter as _BlockingRouter
from .tools import ToolRegistry

__all__ = [
    "ApprovalRequest",
    "BudgetRequest",
    "ChatMessage",
    "ConfigurationError",
    "ContentPart",
    "DecryptionError",
    "Encryption",
    "HistoryMessage",
    "HistoryPage",
    "MemoryRouter",
    "MissingDependencyError",
    "ModelCallUsage",
    "ModelError",
    "OmniCoreAgent",
    "OmnisyncError",
    "Preview",
    "PreviewWindow",
    "RemoteAgent",
    "RunError",
    "RunRecordDict",
    "RunResult",
    "RunsPage",
    "SessionUsage",
    "StoreError",
    "ToolRegistry",
    "Usage",
    "UserContent",
    "set_thread_count",
    "thread_count",
]

_TWIN_CLASSES: dict[type, type[_AsyncTwin]] = {}  # blocking class -> its twin class
_LIVE_TWINS: weakref.WeakValueDictionary[int, _AsyncTwin] = weakref.WeakValueDictionary()  # id(blocking) -> twin


def _unwrap(value: Any) -> Any:
    """The blocking object behind a twin, so an aio router can be passed where a router goes."""
    return value._blocking if isinstance(value, _AsyncTwin) else value


def _twin_of(value: Any) -> Any:
    """The twin of a blocking object (the same one each time while it lives); other values as they are."""
    for klass in type(value).__mro__:
        twin_class = _TWIN_CLASSES.get(klass)
        if twin_class is not None:
            twin = _LIVE_TWINS.get(id(value))
            return twin if twin is not None and twin._blocking is value else twin_class._wrap(value)
    return value


def _coroutine_method(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    async def method(self: _AsyncTwin, *args: Any, **kwargs: Any) -> Any:
        call = getattr(self._blocking, name)  # looked up per call, so a patched blocking method is the one run
        args = tuple(_unwrap(a) for a in args)
        kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
        return _twin_of(await _in_thread(call, *args, **kwargs))

    method.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]
    return method


def _stream_method(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """A method returning a blocking AgentStream becomes one returning its async iterator."""

    @functools.wraps(function)
    def method(self: _AsyncTwin, *args: Any, **kwargs: Any) -> AsyncAgentStream:
        call = getattr(self._blocking, name)
        return AsyncAgentStream(call(*(_unwrap(a) for a in args), **{k: _unwrap(v) for k, v in kwargs.items()}))

    method.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]
    return method


def _forwarding_property(name: str, blocking: property) -> property:
    def get(self: _AsyncTwin) -> Any:
        return _twin_of(getattr(self._blocking, name))

    def set_(self: _AsyncTwin, value: Any) -> None:
        setattr(self._blocking, name, _unwrap(value))

    return property(get, set_ if blocking.fset is not None else None, doc=blocking.__doc__)


class _AsyncTwin:
    """Base of the generated twins: holds the blocking instance and forwards to it."""

    _blocking_class: ClassVar[type]
    _blocking: Any

    def __init_subclass__(cls, blocking: type, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._blocking_class = blocking
        _TWIN_CLASSES[blocking] = cls
        members: dict[str, Any] = {}
        for klass in reversed(blocking.__mro__[:-1]):
            members.update(vars(klass))
        for name, member in members.items():
            if name.startswith("_"):
                continue
            if inspect.isfunction(member):
                twin: Any = _stream_method(name, member) if getattr(member, "__omnisync_streams__", False) else _coroutine_method(name, member)
                twin.__module__, twin.__qualname__ = cls.__module__, f"{cls.__qualname__}.{name}"
            elif isinstance(member, property):
                twin = _forwarding_property(name, member)
            elif isinstance(member, (classmethod, staticmethod)) or hasattr(member, "__get__"):
                raise TypeError(
                    f"omnisync.aio cannot twin {blocking.__qualname__}.{name} ({type(member).__name__}); "
                    "teach _AsyncTwin how, so the async class keeps every public member of the blocking one"
                )
            else:
                twin = member  # a plain class constant
            setattr(cls, name, twin)

        def __init__(self: _AsyncTwin, *args: Any, **kwargs: Any) -> None:
            instance = blocking(*(_unwrap(a) for a in args), **{k: _unwrap(v) for k, v in kwargs.items()})
            self._adopt(instance)

        __init__.__signature__ = inspect.signature(blocking.__init__)  # type: ignore[attr-defined]
        __init__.__doc__ = blocking.__init__.__doc__
        __init__.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = __init__  # type: ignore[method-assign]

    @classmethod
    def _wrap(cls, instance: Any) -> Any:
        twin = cls.__new__(cls)
        twin._adopt(instance)
        return twin

    def _adopt(self, instance: Any) -> None:
        object.__setattr__(self, "_blocking", instance)
        _LIVE_TWINS[id(instance)] = self

    @property
    def blocking(self) -> Any:
        """The blocking object this one drives: the same state, for code that runs in threads."""
        return self._blocking

    # Attributes the blocking object sets on itself (``name``, ``config``...) read and write through.
    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return _twin_of(getattr(self._blocking, name))

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._blocking, name, _unwrap(value))

    def __dir__(self) -> list[str]:
        public = (n for n in dir(self._blocking) if not n.startswith("_"))
        return sorted(set(super().__dir__()) | set(public))

    async def __aenter__(self) -> Any:
        await _in_thread(self._blocking.__enter__)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await _in_thread(self._blocking.__exit__, *exc_info)

    def __enter__(self) -> Any:
        self._blocking.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._blocking.__exit__(*exc_info)

    def __repr__(self) -> str:
        return f"aio.{self._blocking!r}"


class MemoryRouter(_AsyncTwin, blocking=_BlockingRouter):
    """``omnisync.MemoryRouter`` with coroutine methods (``await router.close()``)."""


class OmniCoreAgent(_AsyncTwin, blocking=_BlockingAgent):
    """``omnisync.OmniCoreAgent`` with coroutine methods (``await agent.run(...)``).

    ``memory_router`` takes a router from here or from ``omnisync``; ``agent.memory_router``
    gives the one from here.
    """


class RemoteAgent(_AsyncTwin, blocking=_BlockingRemoteAgent):
    """``omnisync.remote.RemoteAgent`` with coroutine methods: an agent on an omnisync server, awaited."""
