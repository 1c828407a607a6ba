"""omnisync.serve: agents behind HTTP, sessions and runs over JSON and server-sent events.

    from omnisync.serve import create_app
    app = create_app(agent, tokens={"<token>": ["assistant"]})   # any ASGI server runs it

or from a shell: ``omnisync serve module:agent``. Needs ``pip install 'omnisync[serve]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":  # imported on use, so importing omnisync.serve needs no Starlette
        from ..errors import MissingDependencyError

        try:
            from .app import create_app
        except ImportError as exc:
            raise MissingDependencyError(f"omnisync.serve needs Starlette ({exc}): pip install 'omnisync[serve]'") from exc
        return create_app
    raise AttributeError(f"module 'omnisync.serve' has no attribute {name!r}")
