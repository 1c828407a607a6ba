"""The docstrings name things with Sphinx roles (:meth:`stream`), which mkdocstrings leaves as
text: show the name alone, as code."""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(r":(?:meth|func|mod|attr|class|data|exc|obj):(<code>)")


def on_page_content(html: str, **_: Any) -> str:
    return ROLE.sub(r"\1", html)
