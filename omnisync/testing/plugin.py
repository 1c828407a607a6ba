"""The pytest plugin (entry point ``omnisync``): the ``omnisync_cassette`` fixture.

The record mode comes from the command line only (``--omnisync-record-mode``, default
``none``), so neither a config file nor a test can make CI talk to a live model.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from .cassettes import RECORD_MODES, cassette


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("omnisync")
    group.addoption(
        "--omnisync-record-mode",
        choices=RECORD_MODES,
        default="none",
        help="record mode for omnisync cassettes (default: none, replay only)",
    )
    parser.addini("omnisync_cassette_dir", "folder of omnisync cassettes, relative to the rootdir", default="cassettes")


@pytest.fixture
def omnisync_cassette(request: pytest.FixtureRequest) -> Callable[..., AbstractContextManager[Any]]:
    """``with omnisync_cassette("name"):`` replays ``<cassette dir>/name.yaml``."""
    folder = Path(str(request.config.rootpath)) / request.config.getini("omnisync_cassette_dir")
    mode = str(request.config.getoption("--omnisync-record-mode"))

    def use(name: str, **options: Any) -> AbstractContextManager[Any]:
        return cassette(name, folder, record_mode=mode, **options)

    return use
