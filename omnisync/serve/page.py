"""``GET /``: the page to try a served agent, three static files shipped in the package.

The page holds no secret: the token is typed into it and sent by its script, so the page and
its files need none. A strict Content-Security-Policy lets it load only its own script and
style and talk only to this server.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response

FILES = {"index.html": "text/html; charset=utf-8", "page.js": "text/javascript; charset=utf-8", "page.css": "text/css; charset=utf-8"}
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@lru_cache(maxsize=None)
def _read(name: str) -> bytes:
    return (files("omnisync.serve") / "static" / name).read_bytes()


def static_file(name: str) -> Response:
    return Response(_read(name), media_type=FILES[name], headers=HEADERS)


async def index(request: Request) -> Response:
    return static_file("index.html")


async def script(request: Request) -> Response:
    return static_file("page.js")


async def style(request: Request) -> Response:
    return static_file("page.css")
