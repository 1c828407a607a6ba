"""Debian's chromium driven by Playwright for the page tests: where it is, how long a step may
take, and a skip (a failure in CI) that says how to install it when it is missing."""

from __future__ import annotations

import os
import shutil

import pytest

from helpers.backends import IN_CI

CHROMIUM = os.environ.get("OMNISYNC_CHROMIUM", "/usr/bin/chromium")
INSTALL_HINT = "install it with: bash scripts/browser.sh (Debian's chromium) and pip install playwright"
TIMEOUT_MS = 20_000


def browser_or_skip() -> None:
    problem = None
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        problem = f"no chromium at {CHROMIUM}"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "Playwright for Python is not installed"
    if problem is None:
        return
    message = f"{problem}; {INSTALL_HINT}"
    if IN_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)
