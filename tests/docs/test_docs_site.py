"""The documentation site, built strictly (mkdocs.yml), opened in Debian's chromium through
Playwright: its search finds a word, and its API reference shows ``OmniCoreAgent.run`` with
its signature.

Without mkdocs (the ``docs`` extra) the build is skipped with the reason; with CI set it fails,
as a missing chromium does (tests/serve/test_serve_page.py).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest
from helpers.backends import IN_CI
from helpers.serve_servers import http_server
from helpers.browser import CHROMIUM, TIMEOUT_MS, browser_or_skip

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site built from this checkout's docs, served on a free loopback port; yields its URL."""
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        message = "mkdocs is not installed; pip install 'omnisync[docs]'"
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    built = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(built)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr
    with http_server(functools.partial(QuietHandler, directory=str(built))) as base:
        yield base


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def site_page(url: str) -> Iterator[object]:
    browser_or_skip()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url)
            yield page
        finally:
            browser.close()


def test_the_sites_search_finds_a_word_on_the_page_that_holds_it(site):
    from playwright.sync_api import expect

    with site_page(site + "/") as page:
        page.keyboard.press("/")  # the site's shortcut to the search box
        search = page.locator("input.md-search__input")
        expect(search).to_be_focused()
        expect(page.locator(".md-search-result__meta")).to_have_text("Type to start searching")  # its index is loaded
        search.press_sequentially("PgBouncer")  # typed, as the search listens to keys
        results = page.locator(".md-search-result__item")
        expect(results.first).to_be_visible()
        expect(page.locator(".md-search-result")).to_contain_text("Operating it")


def test_the_api_reference_shows_omnicoreagent_run_with_its_signature(site):
    from playwright.sync_api import expect

    with site_page(site + "/reference/omnisync/") as page:
        heading = page.locator("h3[id='omnisync.OmniCoreAgent.run']")
        expect(heading).to_be_visible()
        signature = page.locator("h3[id='omnisync.OmniCoreAgent.run'] + .doc-signature")
        expect(signature).to_contain_text("run(message: UserContent | None, session_id: str | None = None")
        expect(signature).to_contain_text("-> RunResult")
        assert ":meth:" not in page.inner_text("body")  # docs/hooks/sphinx_roles.py shows a role's name alone
        signature.locator("a", has_text="RunResult").click()  # the signature links its types
        expect(page).to_have_url(site + "/reference/omnisync/#omnisync.RunResult")
