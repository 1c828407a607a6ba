"""The page at GET /: served from the package, then used in a real browser (Debian's chromium
driven by Playwright) against a real server whose agent talks to the scripted model.

With CI set, a missing chromium or Playwright fails the browser test; elsewhere it is skipped
with the reason (as tests/helpers/backends.py does for servers).
"""

from __future__ import annotations

import re
import threading
import time
from contextlib import contextmanager

import pytest
import requests
from helpers.browser import CHROMIUM, TIMEOUT_MS, browser_or_skip
from helpers.serve_servers import scripted_model_server, uvicorn_server
from helpers.tool_agents import gated_agent

from omnisync import MemoryRouter
from omnisync.serve import create_app

TOKEN = "page-token-0123456789abcdef"
GATE = threading.Event()  # the "wait" tool returns once it is set


@pytest.fixture
def served(tmp_path):
    """A server with two agents behind a token: "assistant", whose delete_file asks first, and
    "frugal", the same agent allowed one tool call a run."""
    ledger = tmp_path / "ledger.txt"
    ledger.touch()
    router = MemoryRouter("in_memory")
    with scripted_model_server() as model_url:
        agents = {
            name: gated_agent(name, model_url, router, GATE, ledger, **agent_config)
            for name, agent_config in (("assistant", {}), ("frugal", {"budget": {"max_tool_calls": 1}}))
        }
        GATE.clear()
        with uvicorn_server(create_app(agents, tokens={TOKEN: ["assistant", "frugal"]})) as base:
            yield base, ledger
        GATE.set()
        for agent in agents.values():
            agent.cleanup()
    router.close()


def test_the_page_and_its_files_are_served_without_a_token_and_hold_none(served):
    base, _ = served
    page = requests.get(base + "/", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert TOKEN not in page.text
    for name, kind in (("page.js", "text/javascript"), ("page.css", "text/css")):
        assert f"/static/{name}" in page.text
        served_file = requests.get(f"{base}/static/{name}", timeout=10)
        assert served_file.status_code == 200 and served_file.headers["content-type"].startswith(kind)
        assert TOKEN not in served_file.text
    assert "sessionStorage" in requests.get(base + "/static/page.js", timeout=10).text
    assert requests.get(base + "/static/other.js", timeout=10).status_code == 404
    assert requests.get(base + "/agents", timeout=10).status_code == 401  # the page opens no door of the API


@contextmanager
def browser_page(base: str, signed_in: bool = True, **options):
    """A page of the served app in Debian's chromium (``signed_in``: the token already kept in
    its tab, as for a person who connected once); yields the page and the errors its scripts raised."""
    browser_or_skip()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = browser.new_page(**options)
            page.set_default_timeout(TIMEOUT_MS)
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("response", lambda response: response.status == 404 and errors.append(f"404: {response.url}"))
            page.goto(base + "/")
            if signed_in:
                page.evaluate(f"sessionStorage.setItem('omnisync.token', {TOKEN!r})")
                page.reload()  # the token kept in this tab is used at once
                expect(page.locator("#status")).to_have_text("connected: 2 agent(s)")
            yield page, errors
        finally:
            browser.close()


def test_in_a_browser_an_earlier_history_load_answered_last_never_covers_the_settled_run(served):
    """Connecting loads the history while the person may already be running a message (CI saw a
    settled run's history replaced by the empty one under load): of two loads, the later started
    is the one shown, whichever answer arrives last."""
    base, _ = served
    with browser_page(base) as (page, errors):
        from playwright.sync_api import expect

        expect(page.locator("#status")).to_have_text("connected: 2 agent(s)")
        page.fill("#session", "answered-late")
        # The next history request is answered by the server at once, and handed to the page 1.5 s late.
        page.evaluate(
            """() => {
                const fetchNow = window.fetch;
                let delayNext = true;
                window.fetch = async (...args) => {
                    const late = delayNext && String(args[0]).includes("/messages");
                    if (late) delayNext = false;
                    const response = await fetchNow(...args);
                    if (late) {
                        window.lateRequestAnswered = true;
                        await new Promise((resolve) => setTimeout(resolve, 1500));
                    }
                    return response;
                };
                window.earlierLoad = loadHistory();
            }"""
        )
        page.wait_for_function("() => window.lateRequestAnswered === true")  # it read the session while empty (a function: the page's CSP refuses eval of a string)
        page.fill("#message", "hello there")
        page.click("#send button[type=submit]")
        expect(page.locator("#answer")).to_have_attribute("data-status", "completed")
        history = page.locator("#history .message")
        expect(history).to_have_count(2)
        page.evaluate("() => window.earlierLoad")  # the earlier load has now finished too
        assert history.count() == 2, page.locator("#history").inner_text()
        expect(history.nth(1)).to_contain_text("echo: hello there")
        assert errors == []


def test_in_a_browser_a_message_streams_its_answer_shows_the_history_and_a_paused_call_is_approved(served, tmp_path):
    base, ledger = served
    with browser_page(base, signed_in=False, viewport={"width": 1100, "height": 800}) as (page, errors):
        from playwright.sync_api import expect

        # Without a token the page says what the server answered.
        expect(page.locator("#status")).to_contain_text("Unauthorized")
        page.fill("#token", TOKEN)
        page.click("#connect button")
        expect(page.locator("#status")).to_have_text("connected: 2 agent(s)")
        expect(page.locator("#agent")).to_have_value("assistant")
        assert page.evaluate("sessionStorage.getItem('omnisync.token')") == TOKEN

        page.fill("#session", "browser")
        page.fill("#message", "My project is called Atlas and it ships on Friday.")
        page.click("#send button[type=submit]")
        answer = page.locator("#answer")
        expect(answer).to_have_attribute("data-status", "completed")
        assert int(answer.get_attribute("data-deltas") or 0) >= 3  # it arrived in pieces, as they were streamed
        history = page.locator("#history .message")
        try:
            expect(history).to_have_count(2)
        except AssertionError as failure:  # once seen in CI only, under load: say what the page showed
            raise AssertionError(f"{failure}\nthe page said {page.locator('#status').inner_text()!r}; its history: {page.locator('#history').inner_text()!r}; script errors: {errors}") from None
        expect(history.nth(0)).to_contain_text("My project is called Atlas")
        expect(history.nth(1)).to_contain_text("echo: My project is called Atlas")
        # One place for an answer: once settled it is in the history only.
        expect(page.get_by_text("echo: My project is called Atlas and it ships on Friday.")).to_have_count(1)
        expect(answer).to_be_empty()
        expect(answer).to_be_hidden()
        expect(page.locator("#sessions")).to_contain_text("browser (2)")

        page.fill("#message", 'Clean up: use delete_file({"path": "/tmp/old.log"})')
        page.click("#send button[type=submit]")
        expect(answer).to_have_attribute("data-status", "awaiting_approval")
        approval = page.locator("#approvals .approval")
        expect(approval).to_contain_text('delete_file({"path": "/tmp/old.log"})')
        assert ledger.read_text() == ""  # nothing ran before a person said yes
        approval.get_by_role("button", name="Approve").click()
        expect(answer).to_have_attribute("data-status", "completed")
        expect(page.get_by_text("Done: deleted /tmp/old.log")).to_have_count(1)
        expect(page.locator("#events")).to_contain_text("delete_file → deleted /tmp/old.log")
        expect(history).to_have_count(6)  # two more user/assistant turns: the call, its result, the answer
        expect(history.last).to_contain_text("Done: deleted /tmp/old.log")
        assert ledger.read_text() == "delete_file /tmp/old.log\n"
        assert re.fullmatch(r"run_\w+", page.locator("#run").inner_text())

        screenshot = tmp_path / "serve-page.png"
        page.screenshot(path=str(screenshot), full_page=True)
        print(f"screenshot: {screenshot}")
        assert screenshot.stat().st_size > 10_000
        assert errors == []


def test_in_a_browser_a_denied_call_does_not_run(served):
    base, ledger = served
    with browser_page(base) as (page, errors):
        from playwright.sync_api import expect

        page.fill("#message", 'use delete_file({"path": "/etc/passwd"})')
        page.click("#send button[type=submit]")
        page.locator("#approvals").get_by_role("button", name="Deny").click()
        expect(page.locator("#answer")).to_have_attribute("data-status", "completed")
        expect(page.locator("#history .message").last).to_contain_text("Done:")
        assert ledger.read_text() == ""
        assert errors == []


def test_in_a_browser_a_run_that_reached_its_budget_is_granted_more_and_finishes(served):
    base, ledger = served
    with browser_page(base) as (page, errors):
        from playwright.sync_api import expect

        page.select_option("#agent", "frugal")
        page.fill("#message", 'use lookup({"city": "Oslo"}) use lookup({"city": "Rome"})')
        page.click("#send button[type=submit]")
        answer = page.locator("#answer")
        expect(answer).to_have_attribute("data-status", "awaiting_budget")
        budget = page.locator("#approvals .budget")
        expect(budget).to_contain_text("max_tool_calls: 1 used of 1 allowed")
        assert ledger.read_text() == "lookup Oslo\n"
        more = budget.get_by_label("how many more")
        more.fill("0")
        budget.get_by_role("button", name="Grant and resume").click()  # the browser refuses it: nothing is sent
        assert more.evaluate("input => input.validity.rangeUnderflow")
        run_id = page.locator("#run").inner_text()
        record = requests.get(f"{base}/agents/frugal/runs/{run_id}", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10).json()
        assert record["status"] == "awaiting_budget" and record["budget"]["max_tool_calls"] == 1
        more.fill("1")
        budget.get_by_role("button", name="Grant and resume").click()
        expect(answer).to_have_attribute("data-status", "completed")
        expect(page.locator("#events")).to_contain_text("lookup → sunny in Rome")
        assert ledger.read_text() == "lookup Oslo\nlookup Rome\n"
        expect(page.locator("#approvals")).to_be_empty()
        assert errors == []


def test_in_a_browser_stop_cancels_the_run_under_way_and_the_page_asks_for_no_favicon(served):
    base, _ = served
    with browser_page(base) as (page, errors):
        from playwright.sync_api import expect

        assert page.locator("link[rel=icon]").get_attribute("href") == "data:,"
        stop = page.locator("#stop")
        expect(stop).to_be_disabled()
        page.fill("#session", "stopped")
        page.fill("#message", "use wait({})")
        page.click("#send button[type=submit]")
        expect(page.locator("#events")).to_contain_text("wait({})")  # the tool runs, and waits
        expect(stop).to_be_enabled()
        with page.expect_request(lambda request: request.url.endswith("/cancel") and request.method == "POST"):
            stop.click()
        time.sleep(1)  # the request is sent; let the server take it before the tool returns (its answer waits for the run's end)
        GATE.set()  # the tool returns; the run stops before its next model call
        expect(page.locator("#answer")).to_have_attribute("data-status", "cancelled")
        run_id = page.locator("#run").inner_text()
        expect(page.locator("#status")).to_have_text(f"run {run_id}: cancelled")
        expect(stop).to_be_disabled()
        record = requests.get(f"{base}/agents/assistant/runs/{run_id}", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10).json()
        assert record["status"] == "cancelled"
        assert errors == []  # no script error, and no 404 (a favicon asked for) in the page's life
